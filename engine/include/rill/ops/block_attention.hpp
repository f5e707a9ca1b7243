// Block attention (TransNormer's DiagAttention): softmax(Q K^T / sqrt(Dk)) V inside
// non-overlapping blocks of `block` positions, causal or not; the last block may be partial.
// Shapes: q, k [B, H, N, Dk], v, o [B, H, N, Dv] (one storage type, f32 or f16), Dv <= 128;
// lse [B, H, N] f32 receives the log-sum-exp of each row's logits (for the backward pass).
#pragma once

#include <cstdint>

#include "rill/export.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill::ops {

struct BlockAttentionOptions {
  uint32_t block = 64;  // 1..the device's workgroup limit
  bool causal = true;
  float scale = 0.0f;   // 0: 1 / sqrt(Dk)
};

RILL_API Status block_attention_forward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& o, const Tensor& lse, const BlockAttentionOptions& options = {});

// Gradients from the output gradient d_o, with o and lse saved by the forward: dq, dk like q,
// dv like v. delta: [B, H, N] f32 scratch (the row sums do . o).
RILL_API Status block_attention_backward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& o, const Tensor& lse, const Tensor& d_o, const Tensor& dq,
                                         const Tensor& dk, const Tensor& dv, const Tensor& delta,
                                         const BlockAttentionOptions& options = {});

}  // namespace rill::ops
