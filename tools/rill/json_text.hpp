// The JSON text the tool prints and writes. Strings from the user (paths, names, messages quoting
// them) need not be UTF-8: they are written with U+FFFD for the bad bytes, never thrown on once
// the work is done.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace rill_cli {

template <typename Json>  // nlohmann::json or ordered_json (whose keys keep their order)
std::string json_text(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace rill_cli
