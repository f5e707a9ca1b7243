// CPU reference of linear attention (double accumulation). Per (batch, head): q, k [N, Dk],
// v, o [N, Dv]; decay: one lambda per head or empty (no decay); state [Dk, Dv] per head.
//   causal:     o_t = sum_{s<=t} lambda^(t-s) (phi(q_t) . phi(k_s)) v_s
//   non-causal: o_t = phi(q_t) (sum_s phi(k_s)^T v_s)
// state_in (empty: zeros) is the state before position 0; state_out is the state after the last
// position, S = sum_s lambda^(N-1-s) phi(k_s)^T v_s + lambda^N state_in.
#pragma once

#include <cstdint>
#include <vector>

namespace rill::ref {

enum class FeatureMap { kIdentity = 0, kElu1 = 1, kRelu = 2, kSilu = 3 };
double feature(FeatureMap f, double x);

struct LinearAttentionShape {
  int64_t batch = 1, heads = 1, n = 1, dk = 1, dv = 1;
};

void linear_attention_forward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& decay, const LinearAttentionShape& s, FeatureMap f,
                              bool causal, const std::vector<float>& state_in, std::vector<float>& o,
                              std::vector<float>& state_out);

double feature_grad(FeatureMap f, double x);

// Gradients of the forward (zero initial state) for the output gradient d_o.
void linear_attention_backward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                               const std::vector<float>& d_o, const std::vector<float>& decay,
                               const LinearAttentionShape& s, FeatureMap f, bool causal, std::vector<float>& dq,
                               std::vector<float>& dk, std::vector<float>& dv);

}  // namespace rill::ref
