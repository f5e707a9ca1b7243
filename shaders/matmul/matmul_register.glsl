// Matmul with register tiles and no shared memory or barriers (the CPU-driver variant).
// Lavapipe runs a workgroup's invocations as the lanes of SIMD registers; a load from a storage
// buffer costs a loop over the lanes, while moving values between lanes (subgroupBroadcast) is a
// register shuffle. So loads are minimised and spread over lanes: a workgroup is one subgroup of
// SG lanes that computes TM rows x (SG * TN) columns of C. Per SG steps of k, lane l loads
// A[row][k + l] for each row (one load serves SG k steps after broadcasting) and B[k][col] for
// its own columns (one load serves TM rows). Each loaded value feeds SG * TN or TM FMAs.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 0) const uint SG = 8;    // workgroup size = the device's subgroup size (4..32)
layout(constant_id = 1) const uint WG_Y = 1;  // kept for the shared interface; must be 1
layout(constant_id = 4) const uint TM = 16;
layout(constant_id = 5) const uint TN = 4;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

#include "matmul_common.glsl"

afloat acc[TM][TN];
afloat av[TM];
uint cols[TN];

// One k step: row values from lane j of av, this lane's B values of row k.
void k_step(uint batch, uint k, uint j) {
  afloat bv[TN];
  [[unroll]] for (uint c = 0; c < TN; ++c) bv[c] = load_b(batch, k, cols[c]);
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const afloat a_ik = subgroupShuffle(av[i], j);
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = fma(a_ik, bv[c], acc[i][c]);
  }
}

void main() {
  const uint batch = gl_WorkGroupID.z, lane = gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint n0 = gl_WorkGroupID.x * SG * TN + lane;
  const uint a_base = batch * p.a_bs;
  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = 0.0;
  // Clamp indices instead of branching in the loop; out-of-range results are never stored.
  [[unroll]] for (uint c = 0; c < TN; ++c) cols[c] = min(n0 + c * SG, p.N - 1);
  for (uint k0 = 0; k0 < p.K; k0 += SG) {
    const uint k = k0 + lane;
    const bool k_in = k < p.K;
    [[unroll]] for (uint i = 0; i < TM; ++i)
      av[i] = k_in ? load_a(a_base, min(m0 + i, p.M - 1), min(k, p.K - 1)) : afloat(0.0);
    const uint steps = min(SG, p.K - k0);
    if (steps == SG) {
      [[unroll]] for (uint j = 0; j < SG; ++j) k_step(batch, k0 + j, j);
    } else {
      for (uint j = 0; j < steps; ++j) k_step(batch, k0 + j, j);
    }
  }
  const uint c_base = batch * p.c_bs;
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= p.M) break;
    [[unroll]] for (uint c = 0; c < TN; ++c) {
      const uint n = n0 + c * SG;
      if (n < p.N) store_c(c_base, m, n, acc[i][c]);
    }
  }
}
