// The ICL readers (task sets, checkpoints) take a fixed set of tensors and refuse any other: one
// they ignored (a misspelt `sigmas` from a converter) would leave what it stands for at a default,
// silently (every ridge oracle NaN, a run resumed from the wrong state).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include "rill/safetensors.hpp"
#include "rill/status.hpp"

namespace rill::icl::detail {

// InvalidArgument naming the first tensor of `file` not in `known`; `where` prefixes the message
// and `holds` says what such a file holds.
inline Status only_known_tensors(const SafetensorsFile& file, std::initializer_list<std::string_view> known,
                                 const std::string& where, std::string_view holds) {
  for (const SafetensorsEntry& entry : file.entries())
    if (std::find(known.begin(), known.end(), entry.name) == known.end())
      return invalid_argument(where + "an unknown tensor '" + entry.name + "' (" + std::string(holds) + ")");
  return Status::ok();
}

}  // namespace rill::icl::detail
