// The platform file layer on Windows: file mappings, CREATE_NEW temporaries, FlushFileBuffers,
// MoveFileExW and LockFileEx. Paths arrive as UTF-8 and are converted to UTF-16 for the wide API.
#define WIN32_LEAN_AND_MEAN
#ifndef NOMINMAX  // MinGW's libstdc++ may define it already
#define NOMINMAX
#endif
#include <windows.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>
#include <vector>

#include "platform/files.hpp"

namespace rill::platform {
namespace {

std::wstring wide(const std::string& utf8) {
  if (utf8.empty()) return {};
  const int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), int(utf8.size()), nullptr, 0);
  std::wstring out(size_t(n > 0 ? n : 0), L'\0');
  if (n > 0) MultiByteToWideChar(CP_UTF8, 0, utf8.data(), int(utf8.size()), out.data(), n);
  return out;
}

std::string error_text(DWORD code) {
  char* text = nullptr;
  const DWORD n =
      FormatMessageA(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                     nullptr, code, 0, reinterpret_cast<char*>(&text), 0, nullptr);
  std::string out = n > 0 && text ? std::string(text, n) : "error " + std::to_string(code);
  if (text) LocalFree(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == '.')) out.pop_back();
  return out;
}

// An open file on a disk: its handle (the caller closes it) and size.
struct RegularFile {
  HANDLE handle = INVALID_HANDLE_VALUE;
  uint64_t size = 0;
};

// A pipe, console or device is refused as not a regular file (GetFileType), a folder by its
// attributes.
// `share`: what others may do with the file meanwhile (a mapping allows reads only: a write
// under it would change the bytes a caller holds).
Result<RegularFile> open_regular(const std::string& path, uint64_t max_bytes, DWORD share) {
  HANDLE file =
      CreateFileW(wide(path).c_str(), GENERIC_READ, share, nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    const DWORD err = GetLastError();
    if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND) return not_found("no such file");
    if (err == ERROR_ACCESS_DENIED && (GetFileAttributesW(wide(path).c_str()) & FILE_ATTRIBUTE_DIRECTORY))
      return invalid_argument("not a regular file");
    return unavailable("cannot open: " + error_text(err));
  }
  LARGE_INTEGER size{};
  if (GetFileType(file) != FILE_TYPE_DISK || !GetFileSizeEx(file, &size)) {
    CloseHandle(file);
    return invalid_argument("not a regular file");
  }
  if (uint64_t(size.QuadPart) > max_bytes) {
    CloseHandle(file);
    return out_of_range(std::to_string(size.QuadPart) + " bytes exceed the limit of " + std::to_string(max_bytes));
  }
  return RegularFile{file, uint64_t(size.QuadPart)};
}

}  // namespace

std::string last_error_text() { return error_text(GetLastError()); }

Result<std::vector<uint8_t>> read_regular_file(const std::string& path, uint64_t max_bytes) {
  // As a C runtime's fopen opens it: a file another program has open for writing reads as it is.
  RILL_ASSIGN_OR_RETURN(const RegularFile regular,
                        open_regular(path, max_bytes, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE));
  struct Closer {
    HANDLE handle;
    ~Closer() { CloseHandle(handle); }
  } closer{regular.handle};
  RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> data, file_buffer(regular.size));
  size_t got = 0;
  while (got < data.size()) {
    const DWORD ask = DWORD(std::min<size_t>(data.size() - got, 1u << 30));
    DWORD n = 0;
    if (!ReadFile(regular.handle, data.data() + got, ask, &n, nullptr))
      return unavailable("reading failed: " + error_text(GetLastError()));
    if (n == 0) break;  // the file shrank since
    got += n;
  }
  data.resize(got);
  return data;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : view_(std::exchange(other.view_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (view_) UnmapViewOfFile(view_);
    view_ = std::exchange(other.view_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (view_) UnmapViewOfFile(view_);
}

Result<MappedFile> MappedFile::open(const std::string& path, uint64_t max_bytes) {
  RILL_ASSIGN_OR_RETURN(const RegularFile regular, open_regular(path, max_bytes, FILE_SHARE_READ));
  const HANDLE file = regular.handle;
  LARGE_INTEGER size{};
  size.QuadPart = LONGLONG(regular.size);
  MappedFile mapped;
  if (size.QuadPart > 0) {  // a mapping of an empty file is refused
    HANDLE mapping = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    void* view = mapping ? MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0) : nullptr;
    const DWORD err = GetLastError();
    if (mapping) CloseHandle(mapping);  // the view keeps the mapping
    if (!view) {
      CloseHandle(file);
      return resource_exhausted("mapping failed: " + error_text(err));
    }
    mapped.view_ = view;
    mapped.size_ = size_t(size.QuadPart);
  }
  CloseHandle(file);
  return mapped;
}

Status replace_file_durably(const std::string& path, std::span<const uint8_t> bytes) {
  const std::wstring wide_path = wide(path);  // before the temporary exists: nothing after may run out of memory
  std::string tmp;
  std::wstring wide_tmp;
  HANDLE file = INVALID_HANDLE_VALUE;
  for (int attempt = 0; attempt < 16 && file == INVALID_HANDLE_VALUE; ++attempt) {
    tmp = path + ".tmp." + temporary_suffix();
    wide_tmp = wide(tmp);
    file = CreateFileW(wide_tmp.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (file == INVALID_HANDLE_VALUE && GetLastError() != ERROR_FILE_EXISTS) break;
  }
  if (file == INVALID_HANDLE_VALUE)
    return unavailable("cannot write '" + path + "' (creating a temporary file beside it): " + last_error_text());
  // The temporary goes before the message is built (building it may run out of memory and throw);
  // the message still names the failed call's error.
  auto fail = [&](auto make_status) -> Status {
    const DWORD err = GetLastError();
    CloseHandle(file);
    DeleteFileW(wide_tmp.c_str());
    return make_status(error_text(err));
  };
  for (size_t done = 0; done < bytes.size();) {
    const DWORD chunk = DWORD(std::min<size_t>(bytes.size() - done, 1u << 30));
    DWORD written = 0;
    if (!WriteFile(file, bytes.data() + done, chunk, &written, nullptr) || written == 0)
      return fail([&](const std::string& why) { return resource_exhausted("writing '" + path + "' failed: " + why); });
    done += written;
  }
  if (!FlushFileBuffers(file))
    return fail([&](const std::string& why) { return unavailable("writing '" + path + "' failed (sync): " + why); });
  CloseHandle(file);
  // MOVEFILE_WRITE_THROUGH returns only once the rename is on the disk.
  if (!MoveFileExW(wide_tmp.c_str(), wide_path.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
    const DWORD err = GetLastError();
    DeleteFileW(wide_tmp.c_str());  // first, as above
    return unavailable("writing '" + path + "' failed (rename from '" + tmp + "'): " + error_text(err));
  }
  return Status::ok();
}

Result<FileLock> FileLock::acquire(const std::string& path, std::chrono::milliseconds wait) {
  HANDLE file = CreateFileW(wide(path).c_str(), GENERIC_READ | GENERIC_WRITE,
                            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_ALWAYS,
                            FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) return unavailable("cannot open: " + last_error_text());
  FileLock lock;
  lock.handle_ = reinterpret_cast<intptr_t>(file);  // closed by the destructor on every path below
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    OVERLAPPED at{};  // the lock covers the file's first byte
    if (LockFileEx(file, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) return lock;
    if (GetLastError() != ERROR_LOCK_VIOLATION) return unavailable("cannot lock: " + last_error_text());
    if (std::chrono::steady_clock::now() >= deadline)
      return deadline_exceeded("held by another for " + std::to_string(wait.count()) + " ms");
    Sleep(2);
  }
}

namespace {

// Unlocked before the close: Windows releases the locks of a closed handle only some time later.
void unlock_and_close(intptr_t handle) {
  const HANDLE file = reinterpret_cast<HANDLE>(handle);
  OVERLAPPED at{};
  UnlockFileEx(file, 0, 1, 0, &at);
  CloseHandle(file);
}

}  // namespace

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (handle_ != kNone) unlock_and_close(handle_);
    handle_ = std::exchange(other.handle_, kNone);
  }
  return *this;
}

FileLock::~FileLock() {
  if (handle_ != kNone) unlock_and_close(handle_);
}

bool directory_is_writable(const std::string& dir) {
  // Windows has no cheap access(W_OK) for directories: try to create a file there.
  const std::string probe = (dir.empty() ? std::string(".") : dir) + "\\.rill-write-probe." + temporary_suffix();
  HANDLE file = CreateFileW(wide(probe).c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW,
                            FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, nullptr);
  if (file == INVALID_HANDLE_VALUE) return false;
  CloseHandle(file);
  return true;
}

}  // namespace rill::platform
