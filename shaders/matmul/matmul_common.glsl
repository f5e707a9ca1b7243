// Shared interface of the matmul kernels: C[b] = op(A[b]) op(B[b]) (+ bias) (+ C[b] if ACCUMULATE).
// Element (m, k) of A is a[a_off + m * a_rs + k * a_cs]: strides express transposes, and a batch
// stride of 0 broadcasts one matrix over the batch. Same for B (k, n). C is [batch, M, N] row-major.
// A, B, C, bias: sfloat storage; accumulation in f32.
#include "rill_common.glsl"

layout(constant_id = 2) const bool HAS_BIAS = false;
layout(constant_id = 3) const bool ACCUMULATE = false;

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) readonly buffer Bias { sfloat bias[]; };
layout(std430, binding = 3) buffer C { sfloat c[]; };
layout(push_constant) uniform Push {
  uint M, N, K;
  uint a_rs, a_cs, a_bs;  // row, column and batch strides of A (elements)
  uint b_rs, b_cs, b_bs;
  uint c_bs;
} p;

afloat load_a(uint base, uint m, uint k) { return afloat(a[base + m * p.a_rs + k * p.a_cs]); }
afloat load_b(uint base, uint k, uint n) { return afloat(b[base + k * p.b_rs + n * p.b_cs]); }

void store_c(uint base, uint m, uint n, afloat v) {
  if (HAS_BIAS) v += afloat(bias[n]);
  const uint i = base + m * p.N + n;
  if (ACCUMULATE) v += afloat(c[i]);
  c[i] = sfloat(v);
}
