// The platform file layer on POSIX systems (Linux, Android, macOS): mmap, exclusive create, fsync,
// rename, flock.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "platform/files.hpp"

namespace rill::platform {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// An open regular file: its descriptor (the caller closes it) and size.
struct RegularFile {
  int fd = -1;
  uint64_t size = 0;
};

// A device is refused before it is opened (opening some has effects: a tape rewinds, a watchdog
// arms). Non-blocking: a path swapped for a FIFO between the two checks does not wait for a writer
// for ever; it is refused after the open as not a regular file. Reads of a regular file are not
// affected.
Result<RegularFile> open_regular(const std::string& path, uint64_t max_bytes) {
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) return invalid_argument("not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return not_found("no such file");
    return unavailable("cannot open: " + std::string(std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("not a regular file");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return out_of_range(std::to_string(size) + " bytes exceed the limit of " + std::to_string(max_bytes));
  }
  return RegularFile{fd, size};
}

}  // namespace

std::string last_error_text() { return std::strerror(errno); }

Result<std::vector<uint8_t>> read_regular_file(const std::string& path, uint64_t max_bytes) {
  RILL_ASSIGN_OR_RETURN(const RegularFile regular, open_regular(path, max_bytes));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{regular.fd};
  RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> data, file_buffer(regular.size));
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(regular.fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unavailable("reading failed: " + std::string(std::strerror(errno)));
    if (n == 0) break;  // the file shrank since
    got += size_t(n);
  }
  data.resize(got);
  return data;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : view_(std::exchange(other.view_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (view_) ::munmap(view_, size_);
    view_ = std::exchange(other.view_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (view_) ::munmap(view_, size_);
}

Result<MappedFile> MappedFile::open(const std::string& path, uint64_t max_bytes) {
  RILL_ASSIGN_OR_RETURN(const RegularFile regular, open_regular(path, max_bytes));
  const int fd = regular.fd;
  const uint64_t size = regular.size;
  MappedFile file;
  if (size > 0) {  // mmap refuses length 0
    void* view = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (view == MAP_FAILED) {
      Status s = resource_exhausted("mapping failed: " + last_error_text());
      ::close(fd);
      return s;
    }
    file.view_ = view;
    file.size_ = static_cast<size_t>(size);
  }
  ::close(fd);  // the mapping keeps the file
  return file;
}

// A new file beside `path` for its next contents, opened for writing, created with `mode` (the
// process's umask applies, as to any new file: mkstemp makes 0600, and reading the umask means
// setting it, which races with other threads). -1 with errno on failure.
int create_temporary(const std::string& path, mode_t mode, std::string& tmp) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = path + ".tmp." + temporary_suffix();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

Status replace_file_durably(const std::string& path, std::span<const uint8_t> bytes) {
  // A file replaced keeps its permissions (a private 0600 state stays private, its new contents
  // too while they are written); a new one has those the umask leaves of 0666.
  const std::string folder = directory_of(path);  // before the rename: nothing after it may run out of memory
  struct stat existing {};
  const bool replacing = ::stat(path.c_str(), &existing) == 0;
  std::string tmp;
  const int fd = create_temporary(path, replacing ? (existing.st_mode & 0777) : 0666, tmp);
  if (fd < 0)
    return unavailable("cannot write '" + path + "' (creating a temporary file beside it): " + last_error_text());
  // The temporary goes before the message is built (building it may run out of memory and throw);
  // the message still reads the failed call's errno.
  auto fail = [&](auto make_status) -> Status {
    const int failed_errno = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = failed_errno;
    return make_status();
  };
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail([&] { return resource_exhausted("writing '" + path + "' failed: " + last_error_text()); });
    done += static_cast<size_t>(n);
  }
  // Exactly the replaced file's mode (the umask may have narrowed the temporary's).
  if ((replacing && ::fchmod(fd, existing.st_mode & 07777) != 0) || ::fsync(fd) != 0)
    return fail([&] { return unavailable("writing '" + path + "' failed (sync): " + last_error_text()); });
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int failed_errno = errno;
    ::unlink(tmp.c_str());  // first, as above
    errno = failed_errno;
    return unavailable("writing '" + path + "' failed (rename from '" + tmp + "'): " + last_error_text());
  }
  // Persist the rename itself. A file system that cannot sync a directory (EINVAL) or a folder
  // the user may not read keeps it as it keeps any rename; an I/O error is reported: the file is
  // replaced, but may not be after a crash.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    if (errno != EACCES)
      return unavailable("'" + path +
                         "' was replaced, but its folder could not be opened to sync: " + last_error_text());
    return Status::ok();
  }
  const bool synced = ::fsync(dir) == 0 || errno == EINVAL || errno == ENOTSUP;
  const Status failed =
      synced ? Status::ok()
             : unavailable("'" + path + "' was replaced, but syncing its folder failed: " + last_error_text());
  ::close(dir);
  return failed;
}

bool directory_is_writable(const std::string& dir) {
  // A file made there and removed, as on Windows: access(W_OK) says yes to root everywhere, where
  // /proc or a folder of a FUSE mount refuses the file itself (a run trained to its end, then failed
  // to save). On failure errno stays the open's (the error text names it).
  const std::string probe = (dir.empty() ? std::string(".") : dir) + "/.rill-write-probe." + temporary_suffix();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

Result<FileLock> FileLock::acquire(const std::string& path, std::chrono::milliseconds wait) {
  // Read-only: flock needs no more, and another user's lock file in a shared folder opens so too.
  // O_NOFOLLOW: a link planted at the name is not followed; O_NONBLOCK: a FIFO there does not hold
  // the open (it affects nothing else here).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  if (fd < 0) return unavailable("cannot open: " + last_error_text());
  FileLock lock;
  lock.handle_ = fd;  // closed by the destructor on every path below
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return unavailable("cannot lock: " + last_error_text());
    if (std::chrono::steady_clock::now() >= deadline)
      return deadline_exceeded("held by another for " + std::to_string(wait.count()) + " ms");
    ::usleep(2000);
  }
  return lock;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (handle_ != kNone) ::close(int(handle_));  // closing the descriptor releases its lock
    handle_ = std::exchange(other.handle_, kNone);
  }
  return *this;
}

FileLock::~FileLock() {
  if (handle_ != kNone) ::close(int(handle_));
}

}  // namespace rill::platform
