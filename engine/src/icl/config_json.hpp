// TrainConfig <-> JSON, for checkpoints (and anything else that records a run's settings).
// Parsing treats the text as untrusted: every field is type-checked and the result validated.
#pragma once

#include <string>

#include "rill/icl.hpp"

namespace rill::icl::detail {

std::string config_to_json(const TrainConfig& config);
Result<TrainConfig> config_from_json(const std::string& text);

}  // namespace rill::icl::detail
