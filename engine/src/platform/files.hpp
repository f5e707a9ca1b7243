// What rill's file handling needs from the operating system, behind one small interface with a
// POSIX implementation (files_posix.cpp) and a Windows one (files_windows.cpp); everything above it
// is portable C++. Paths are UTF-8 on every platform.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <new>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rill/status.hpp"

namespace rill::platform {

// A whole regular file mapped read-only into memory (zero-copy reads of large weight files).
class MappedFile {
 public:
  // Errors name no path (callers add their own context): NotFound "no such file", Unavailable
  // "cannot open: <reason>", InvalidArgument "not a regular file", OutOfRange "<n> bytes exceed the
  // limit of <max_bytes>", ResourceExhausted "mapping failed: <reason>". An empty file maps to an
  // empty view.
  static Result<MappedFile> open(const std::string& path, uint64_t max_bytes);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(view_), size_}; }

 private:
  void* view_ = nullptr;
  size_t size_ = 0;
};

// A whole regular file read into memory, opened as MappedFile::open opens it (a device or FIFO is
// refused, never opened to wait for a writer) and with its errors, plus ResourceExhausted "no host
// memory for <n> bytes" and Unavailable "reading failed: <reason>". A file that shrinks while read
// gives what was there.
Result<std::vector<uint8_t>> read_regular_file(const std::string& path, uint64_t max_bytes);

// The buffer read_regular_file reads a file of `size` bytes into: ResourceExhausted without the memory.
inline Result<std::vector<uint8_t>> file_buffer(uint64_t size) {
  try {
    return std::vector<uint8_t>(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    try {  // the message may not fit either
      return resource_exhausted("no host memory for " + std::to_string(size) + " bytes");
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kResourceExhausted, std::string());
    }
  }
}

// Six random letters and digits, as mkstemp's XXXXXX: the temporaries' names, PATH.tmp.XXXXXX, are
// what the cleanup of a killed writer's leftovers looks for.
inline std::string temporary_suffix() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device device;
  std::string out(6, '\0');
  for (char& c : out) c = kAlphabet[device() % (sizeof kAlphabet - 1)];
  return out;
}

// Writes `bytes` to a new temporary file `path`.tmp.XXXXXX beside `path`, flushes it to the disk,
// renames it over `path` and persists the rename where the platform can. On failure the temporary
// is removed and `path` is untouched.
Status replace_file_durably(const std::string& path, std::span<const uint8_t> bytes);

// An exclusive advisory lock on the file `path` (created empty where missing, and left there: removing
// it would let a waiter lock a file that no longer has the name), held until destroyed. Holders in
// other processes, and other FileLocks of this one, wait for it; code that does not ask is not held
// back. flock on POSIX, LockFileEx on Windows.
class FileLock {
 public:
  // Waits up to `wait` for the lock: DeadlineExceeded "held by another for <n> ms" past it,
  // Unavailable "cannot open: <reason>" where the file cannot be opened or created.
  static Result<FileLock> acquire(const std::string& path, std::chrono::milliseconds wait);

  FileLock() = default;
  FileLock(FileLock&& other) noexcept : handle_(std::exchange(other.handle_, kNone)) {}
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  static constexpr intptr_t kNone = -1;
  intptr_t handle_ = kNone;  // a descriptor on POSIX, a HANDLE on Windows
};

// Whether this process may create files in the directory `dir` (which exists).
bool directory_is_writable(const std::string& dir);

// The text of the last system error (errno, or GetLastError on Windows).
std::string last_error_text();

// UTF-8 strings to and from std::filesystem paths (a plain std::string would be read in the ANSI
// code page on Windows).
inline std::filesystem::path path_from_utf8(const std::string& utf8) {
  return std::filesystem::path(std::u8string(utf8.begin(), utf8.end()));
}
inline std::string utf8_from_path(const std::filesystem::path& path) {
  const std::u8string s = path.u8string();
  return std::string(s.begin(), s.end());
}

}  // namespace rill::platform
