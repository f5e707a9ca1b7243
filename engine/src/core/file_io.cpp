// Atomic file writes and size-capped reads (POSIX).
#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rill {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  if (path.empty()) return invalid_argument("write_file_atomic: empty path");
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return unavailable("cannot create temporary file for '" + path + "': " + errno_text());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = resource_exhausted("writing '" + tmp + "' failed: " + errno_text());
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    Status s = unavailable("syncing '" + tmp + "' failed: " + errno_text());
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = unavailable("renaming '" + tmp + "' to '" + path + "' failed: " + errno_text());
    ::unlink(tmp.c_str());
    return s;
  }
  // Persist the rename itself.
  int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT) return not_found("no such file: '" + path + "'");
    return unavailable("cannot open '" + path + "': " + errno_text());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path + "' is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return out_of_range("'" + path + "' is " + std::to_string(st.st_size) +
                        " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  std::vector<uint8_t> data(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = unavailable("reading '" + path + "' failed: " + errno_text());
      ::close(fd);
      return s;
    }
    if (n == 0) break;  // file shrank while reading
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(done);
  return data;
}

}  // namespace rill
