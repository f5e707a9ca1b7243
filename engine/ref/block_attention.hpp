// CPU reference of block attention (softmax attention inside non-overlapping blocks), double
// accumulation with the maximum subtracted. q, k: [BH, N, Dk], v, o: [BH, N, Dv]; lse: [BH, N].
#pragma once

#include <cstdint>
#include <vector>

namespace rill::ref {

void block_attention_forward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                             int64_t bh, int64_t n, int64_t dk, int64_t dv, int64_t block, bool causal, float scale,
                             std::vector<float>& o, std::vector<float>& lse);

// Gradients for the output gradient d_o (recomputing the forward).
void block_attention_backward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& d_o, int64_t bh, int64_t n, int64_t dk, int64_t dv,
                              int64_t block, bool causal, float scale, std::vector<float>& dq,
                              std::vector<float>& dkey, std::vector<float>& dval);

}  // namespace rill::ref
