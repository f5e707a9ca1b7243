// The words a yes/no setting (an environment variable such as RILL_VALIDATION) takes, in one place.
#pragma once

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace rill::detail {

// 1/true/yes/on and 0/false/no/off in any case; the empty string is off. nullopt: none of them.
inline std::optional<bool> parse_flag_word(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty() || s == "0" || s == "false" || s == "no" || s == "off") return false;
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  return std::nullopt;
}

}  // namespace rill::detail
