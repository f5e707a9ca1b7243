// One CSV field as RFC 4180 writes it: in double quotes, a quote inside doubled (an error message
// may quote a path that holds one).
#pragma once

#include <string>
#include <string_view>

namespace rill_cli {

inline std::string csv_field(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace rill_cli
