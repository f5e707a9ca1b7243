// File helpers. Writes are atomic (temp file, fsync, rename) so a crash never leaves a half-written
// file where the user's data was; reads are capped because files are untrusted input.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/files.hpp"  // write_file_atomic, check_writable, read_file
#include "rill/status.hpp"
