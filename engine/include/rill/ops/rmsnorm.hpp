// RMSNorm: y = x / sqrt(mean(x^2) + eps) * gain, over the last dimension.
// Shapes: x, y, dy, dx: [..., dim] (rows = product of the leading dimensions); gain, dgain: [dim];
// rstd: [rows] f32, saved by forward for backward. x, y, gain, dy, dx share one storage type
// (f32 or f16; arithmetic is f32); dgain is f32.
#pragma once

#include "rill/export.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill::ops {

// gain may be null (SRMSNorm: no gain).
RILL_API Status rmsnorm_forward(Sequence& seq, const Tensor& x, const Tensor* gain, const Tensor& y,
                                const Tensor& rstd, float eps = 1e-6f);

// h = x + residual, y = rmsnorm(h): the residual add fused into the norm; h is written too.
RILL_API Status rmsnorm_residual_forward(Sequence& seq, const Tensor& x, const Tensor& residual, const Tensor* gain,
                                         const Tensor& h, const Tensor& y, const Tensor& rstd, float eps = 1e-6f);

// dx from dy (accumulated into dx when `accumulate`, e.g. a residual branch's gradient already
// there); dgain when not null (needs gain).
RILL_API Status rmsnorm_backward(Sequence& seq, const Tensor& x, const Tensor* gain, const Tensor& rstd,
                                 const Tensor& dy, const Tensor& dx, const Tensor* dgain, bool accumulate = false);

}  // namespace rill::ops
