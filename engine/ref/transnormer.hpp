// CPU reference of the TransNormer language model (the executable specification of rill::lm; the
// model is described at the top of rill/lm.hpp): plain loops, activations and accumulation in
// double. Shapes: N tokens, width D, H heads of Dh = D / H, GLU width F, vocabulary V.
// NormAttention runs as a recurrence (one Dh x Dh state per head), so the cost is O(N) for it and
// O(N * block) for DiagAttention: usable for N of a few thousand at small widths.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "rill/lm.hpp"

namespace rill::ref {

// The weight called `name` (see rill::lm::weight_specs) as floats, row-major.
using TransNormerWeightFn = std::function<std::vector<float>(const std::string& name)>;

// Logits of every position, [N, V] row-major. The config must be valid (validate() is not called
// here: rill_ref does not link the library); empty layer_kinds mean the default split. A token >= V
// embeds as a zero row, like ops::embedding_forward. Throws std::invalid_argument when a weight
// has the wrong number of elements.
// What a forward saw on its way, for tests that need a premise to hold (an output past f16's range).
struct TransNormerTrace {
  double largest_norm_attention_output = 0;  // max |o| of any NormAttention layer, before its norm
};

std::vector<float> transnormer_logits(const rill::lm::ModelConfig& c, const TransNormerWeightFn& weight,
                                      std::span<const uint32_t> tokens, TransNormerTrace* trace = nullptr);

}  // namespace rill::ref
