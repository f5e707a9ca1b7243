// Duplicate-key detection for untrusted JSON. nlohmann keeps one of two equal keys silently, and
// its callback parser rescans an object at the end of each member object (quadratic: a
// safetensors header of 100,000 tensors took minutes). This walks the text once with a SAX
// handler that only remembers the keys of the objects still open.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rill {

// The first key that appears twice in one object of `text`; nullopt when there is none or when the
// text is not valid JSON (the caller's parse reports that).
std::optional<std::string> first_duplicate_key(std::string_view text);

}  // namespace rill
