// Atomic file writes and size-capped reads (POSIX).
#include "core/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
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

// Temporaries PATH.tmp.XXXXXX left by writers that were killed between write and rename. Only
// those older than a minute: a younger one may belong to a writer still at work.
void remove_stale_temporaries(const std::string& path) {
  const std::string dir = directory_of(path);
  const std::string prefix = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 60) ::unlink(full.c_str());
  }
  ::closedir(d);
}

}  // namespace

Status check_writable(const std::string& path) {
  if (path.empty()) return invalid_argument("an output path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return invalid_argument("cannot write '" + path + "': it is a directory");
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) return not_found("cannot write '" + path + "': " + errno_text());
  if (!S_ISDIR(st.st_mode)) return invalid_argument("cannot write '" + path + "': '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) return invalid_argument("cannot write '" + path + "': " + errno_text());
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  if (path.empty()) return invalid_argument("write_file_atomic: empty path");
  remove_stale_temporaries(path);
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return unavailable("cannot write '" + path + "' (creating a temporary file beside it): " + errno_text());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = resource_exhausted("writing '" + path + "' failed: " + errno_text());
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    Status s = unavailable("writing '" + path + "' failed (sync): " + errno_text());
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = unavailable("writing '" + path + "' failed (rename from '" + tmp + "'): " + errno_text());
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
