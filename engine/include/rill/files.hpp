// Files the way rill writes them, for apps that want the same guarantees for their own files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/export.hpp"
#include "rill/status.hpp"

namespace rill {

// Writes `bytes` to `path` atomically (a temporary file beside it, fsync, rename, fsync of the
// directory): after a crash or a kill either the old file or the complete new one is there, never
// a half-written one. Temporaries that killed writers left beside `path` (PATH.tmp.XXXXXX, older
// than a minute) are removed first. A symlink is written through (the file it names is replaced,
// the link stays), a replaced file keeps its permissions, and anything but a regular file there (a
// FIFO, a device) is refused. Errors name `path` and the system's reason.
RILL_API Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

// OK when `path` can be written: its directory exists and is writable, and the path is not a
// directory, a device or a FIFO. Lets a long job refuse a bad output path before it starts rather than after.
RILL_API Status check_writable(const std::string& path);

// Whether two paths name one file: the same path after links and "..", or one file through a hard
// link. For refusing to write one file over another that the same call reads or writes. An empty
// path names no file: false.
RILL_API bool same_file(const std::string& a, const std::string& b);

// Reads a whole regular file, the way rill reads files it does not trust: OutOfRange past
// `max_bytes` (checked before reading), and anything but a regular file (a FIFO, a device, a
// directory) refused without blocking. Errors name `path` and the system's reason.
RILL_API Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes);

}  // namespace rill
