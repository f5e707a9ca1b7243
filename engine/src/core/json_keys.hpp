// Guards for untrusted JSON, run before it is parsed: duplicate keys and nesting depth.
// Duplicate keys: nlohmann keeps one of two equal keys silently, and
// its callback parser rescans an object at the end of each member object (quadratic: a
// safetensors header of 100,000 tensors took minutes). This walks the text once with a SAX
// handler that only remembers the keys of the objects still open.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rill {

// The first key that appears twice in one object of `text`; nullopt when there is none or when the
// text is not valid JSON (the caller's parse reports that).
std::optional<std::string> first_duplicate_key(std::string_view text);

// True when objects and arrays in `text` nest deeper than `limit` (brackets inside strings do not
// count). Runs before the JSON parser: a file of a million '[' is refused before the parser builds
// a million levels, and before anything copies or prints the value recursively (a stack overflow).
bool nests_deeper_than(std::string_view text, size_t limit);

}  // namespace rill
