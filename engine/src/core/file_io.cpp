// Atomic file writes and size-capped reads, in portable C++ over the platform layer.
#include "core/file_io.hpp"

#include <chrono>
#include <system_error>

#include "platform/files.hpp"

namespace rill {
namespace {

namespace fs = std::filesystem;
using platform::path_from_utf8;

fs::path directory_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// Temporaries PATH.tmp.XXXXXX left by writers that were killed between write and rename. Only
// those older than a minute: a younger one may belong to a writer still at work.
void remove_stale_temporaries(const fs::path& path) {
  const std::u8string prefix = path.filename().u8string() + u8".tmp.";
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(directory_of(path), ec), end; !ec && it != end; it.increment(ec)) {
    const std::u8string name = it->path().filename().u8string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code entry_ec;
    if (!it->is_regular_file(entry_ec) || it->is_symlink(entry_ec)) continue;
    const auto written = it->last_write_time(entry_ec);
    if (!entry_ec && now - written > std::chrono::minutes(1)) fs::remove(it->path(), entry_ec);
  }
}

// Where writing `path` puts the bytes: the file a symlink names (the link stays a link), refused
// where something other than a regular file is there (a FIFO or a device would be replaced by a
// regular file: as root, /dev/full was).
Result<fs::path> output_target(const std::string& path) {
  if (path.empty()) return invalid_argument("an output path is empty");
  fs::path p = path_from_utf8(path);
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(p, ec))) {
    p = fs::weakly_canonical(p, ec);
    if (ec) return unavailable("cannot write '" + path + "': following its link: " + ec.message());
  }
  const fs::file_status st = fs::status(p, ec);
  if (fs::is_directory(st)) return invalid_argument("cannot write '" + path + "': it is a directory");
  if (fs::exists(st) && !fs::is_regular_file(st))
    return invalid_argument("cannot write '" + path +
                            "': it is not a regular file (a device, FIFO or socket), which rill would replace");
  return p;
}

}  // namespace

Status check_writable(const std::string& path) {
  RILL_ASSIGN_OR_RETURN(const fs::path p, output_target(path));
  std::error_code ec;
  const fs::path dir = directory_of(p);
  const std::string dir_text = platform::utf8_from_path(dir);
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return not_found("cannot write '" + path + "': no such directory '" + dir_text + "'");
  if (!fs::is_directory(st))
    return invalid_argument("cannot write '" + path + "': '" + dir_text + "' is not a directory");
  if (!platform::directory_is_writable(dir_text))
    return invalid_argument("cannot write '" + path + "': " + platform::last_error_text());
  return Status::ok();
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;  // no file (and fs::absolute throws on an empty path)
  std::error_code ec_a, ec_b, ec;
  const fs::path pa = path_from_utf8(a), pb = path_from_utf8(b);
  // weakly_canonical keeps a relative path relative where nothing of it exists ("x" stays "x",
  // "./x" becomes absolute): absolute first (the forms that report errors: a removed working
  // directory must not throw out of a Status API).
  const fs::path aa = fs::absolute(pa, ec_a), ab = fs::absolute(pb, ec_b);
  if (!ec_a && !ec_b) {
    const fs::path ca = fs::weakly_canonical(aa, ec_a).lexically_normal(),
                   cb = fs::weakly_canonical(ab, ec_b).lexically_normal();
    if (!ec_a && !ec_b && ca == cb) return true;
  }
  return fs::exists(pa, ec) && fs::exists(pb, ec) && fs::equivalent(pa, pb, ec) && !ec;
}

Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  if (path.empty()) return invalid_argument("write_file_atomic: empty path");
  RILL_ASSIGN_OR_RETURN(const fs::path target, output_target(path));
  remove_stale_temporaries(target);
  return platform::replace_file_durably(platform::utf8_from_path(target), bytes);
}

Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes) {
  // Opened by descriptor and checked there (platform/files.hpp): a path swapped for a FIFO after a
  // look at it must not wait for a writer for ever.
  Result<std::vector<uint8_t>> bytes = platform::read_regular_file(path, max_bytes);
  if (bytes.is_ok()) return bytes;
  const Status& s = bytes.status();
  switch (s.code()) {
    case StatusCode::kNotFound:
      return not_found("no such file: '" + path + "'");
    case StatusCode::kInvalidArgument:
      return invalid_argument("'" + path + "' is " + s.message());
    case StatusCode::kOutOfRange:
      return out_of_range("'" + path + "': " + s.message());
    case StatusCode::kResourceExhausted:
      return resource_exhausted(s.message() + " of '" + path + "'");
    default:
      return unavailable("cannot read '" + path + "': " + s.message());
  }
}

}  // namespace rill
