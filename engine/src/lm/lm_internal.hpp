// Internal helpers of the TransNormer language model shared by config, weights and the GPU model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/lm.hpp"

namespace rill::lm::detail {

// The largest config file load_config reads (Weights::save writes none larger).
inline constexpr uint64_t kMaxConfigFileBytes = 1u << 20;

// The layer kinds a config gets when it names none: the first layers / 2 DiagAttention, the rest
// NormAttention (one layer: NormAttention).
std::vector<LayerKind> default_layer_kinds(uint32_t layers);

// A stable 16-hex-digit tag of a config (FNV-1a 64 of config_to_json, with empty layer_kinds
// filled in first): equal configs give equal tags on every platform. Saved states carry it so that
// a state is only restored into a model of the same shape.
std::string config_fingerprint(const ModelConfig& config);

// A 16-hex-digit tag of the weights as stored: each tensor's name, dtype and size, and its bytes
// (up to 1,024 elements) or 64 evenly spaced elements: two trainings of one config differ, while
// tagging a 385M-parameter model reads a few thousand values. Saved states carry it beside the config's,
// so a state restores only into the weights it was computed with (a file converted to f16 counts
// as other weights).
Result<std::string> weights_fingerprint(const Weights& w);

}  // namespace rill::lm::detail
