// Matmul for the linear layers: C = op(A) op(B) (+ bias) (+ C when accumulating), batched.
// Shapes: A [..., M, K] ([..., K, M] with transpose_a), B [..., K, N] ([..., N, K] with transpose_b),
// C [..., M, N]; the leading dimensions of A and B are either C's or absent (broadcast); bias [N].
// All of one storage type, f32 or f16 (f32 accumulation). The engine picks a register-tiled
// kernel without barriers on CPU drivers and a shared-memory tiled kernel on GPUs.
// B may also be a packed weight matrix (f16, int8 or int4, packed_weights.hpp): [K, N] or [batch, K, N],
// not transposed; A, C and the bias keep the activations' storage type.
#pragma once

#include "rill/export.hpp"
#include "rill/ops/packed_weights.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill::ops {

struct MatmulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
  bool accumulate = false;     // C += A B (gradient accumulation)
  const Tensor* bias = nullptr;
};

RILL_API Status matmul(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options = {});
RILL_API Status matmul(Sequence& seq, const Tensor& a, const PackedWeights& b, const Tensor& c,
                       const MatmulOptions& options = {});

}  // namespace rill::ops
