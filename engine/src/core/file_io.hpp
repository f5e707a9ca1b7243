// File helpers. Writes are atomic (temp file, fsync, rename) so a crash never leaves a half-written
// file where the user's data was; reads are capped because files are untrusted input.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/status.hpp"

namespace rill {

// Writes `bytes` to `path` atomically: either the old file or the complete new one survives.
Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

// Reads the whole file; refuses files larger than `max_bytes` with OutOfRange.
Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes);

}  // namespace rill
