// Linear attention (TransNormer's NormAttention core: no softmax, no scaling denominator).
// Shapes: q, k [B, H, N, Dk], v, o [B, H, N, Dv] (one storage type, f32 or f16; f32 arithmetic;
// the forward, step and naive ops also take an f32 o for f16 inputs: without decay o_t sums over every
// earlier position and outgrows f16's 65504);
// state [B, H, Dk, Dv] f32; decay [H] f32 with values in (0, 1] (absent: no decay).
//   causal:     o_t = sum_{s<=t} lambda^(t-s) (phi(q_t) . phi(k_s)) v_s
//   non-causal: o = phi(Q) (phi(K)^T V)
// The causal form is computed chunk by chunk: within a chunk the masked (Q K^T) V, across chunks
// through the running state S (kept in f32), and the chunks are split over several dispatches so
// that none runs unboundedly long. The state it leaves is what decoding continues from.
#pragma once

#include <cstdint>

#include "rill/export.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill::ops {

enum class FeatureMap { kIdentity = 0, kElu1 = 1, kRelu = 2, kSilu = 3 };

struct LinearAttentionOptions {
  bool causal = true;
  FeatureMap feature_map = FeatureMap::kIdentity;
  const Tensor* decay = nullptr;  // [H] f32; null: no decay (lambda = 1)
  uint32_t chunk = 64;            // chunk length C (1..64)
  // Chunks per dispatch; 0: chosen per device (fewer on GPUs with a watchdog).
  uint32_t chunks_per_dispatch = 0;
  // Start from the values in `state` (continuing a sequence) instead of zeros.
  bool continue_state = false;
};

// o for the whole sequence; `state` ends as the state after the last position (causal) or
// phi(K)^T V (non-causal).
RILL_API Status linear_attention_forward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& o, const Tensor& state,
                                         const LinearAttentionOptions& options = {});

// One decoding step: q, k [B, H, 1, Dk], v, o [B, H, 1, Dv]; S <- lambda S + k^T v, o = q S.
RILL_API Status linear_attention_step(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& o, const Tensor& state, const LinearAttentionOptions& options = {});

// Gradients of the causal forward (started from a zero state) for the output gradient d_o:
// dq, dk like q, dv like v. scratch: [B, H, Dk, Dv] f32, overwritten (the running states of the
// three chunked scans: dq forward in time, dk and dv backward).
RILL_API Status linear_attention_backward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                                          const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                          const Tensor& scratch, const LinearAttentionOptions& options = {});

// The quadratic form of the causal forward (no state): the baseline for tests and benchmarks.
RILL_API Status linear_attention_naive(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& o, const LinearAttentionOptions& options = {});

}  // namespace rill::ops
