// File helpers. Writes are atomic (temp file, fsync, rename) so a crash never leaves a half-written
// file where the user's data was; reads are capped because files are untrusted input.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/files.hpp"  // write_file_atomic, check_writable
#include "rill/status.hpp"

namespace rill {

// Reads the whole file; refuses files larger than `max_bytes` with OutOfRange.
Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes);

}  // namespace rill
