// Matmul with register tiles and no shared memory or barriers (the CPU-driver variant: lavapipe
// runs a workgroup row as SIMD lanes, so lanes take adjacent columns and B loads are contiguous).
// Each invocation computes TM x TN outputs: rows m0 + i * WG_Y, columns n0 + j * WG_X.
layout(constant_id = 0) const uint WG_X = 8;
layout(constant_id = 1) const uint WG_Y = 8;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

#include "matmul_common.glsl"

void main() {
  const uint batch = gl_WorkGroupID.z;
  const uint m0 = gl_WorkGroupID.y * WG_Y * TM + gl_LocalInvocationID.y;
  const uint n0 = gl_WorkGroupID.x * WG_X * TN + gl_LocalInvocationID.x;
  const uint a_base = batch * p.a_bs, b_base = batch * p.b_bs;
  afloat acc[TM][TN];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;
  // Clamp indices instead of branching in the loop; out-of-range results are never stored.
  uint rows[TM], cols[TN];
  for (uint i = 0; i < TM; ++i) rows[i] = min(m0 + i * WG_Y, p.M - 1);
  for (uint j = 0; j < TN; ++j) cols[j] = min(n0 + j * WG_X, p.N - 1);
  for (uint k = 0; k < p.K; ++k) {
    afloat av[TM], bv[TN];
    for (uint i = 0; i < TM; ++i) av[i] = load_a(a_base, rows[i], k);
    for (uint j = 0; j < TN; ++j) bv[j] = load_b(b_base, k, cols[j]);
    for (uint i = 0; i < TM; ++i)
      for (uint j = 0; j < TN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
  }
  const uint c_base = batch * p.c_bs;
  for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i * WG_Y;
    if (m >= p.M) break;
    for (uint j = 0; j < TN; ++j) {
      const uint n = n0 + j * WG_X;
      if (n < p.N) store_c(c_base, m, n, acc[i][j]);
    }
  }
}
