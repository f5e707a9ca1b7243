// Parallel chunked linear attention, pass 1 of 3 (la_par_common.glsl has the form; la_par_scan.comp
// is pass 2, la_par_output.glsl pass 3): every chunk's own state, all chunks at once. Workgroup
// (c, bh) takes chunk c of the window of head bh, its mapped positions t0 .. t0 + len - 1:
//   U_c = sum_{s < len} lambda^(len-1-s) g(b_{t0+s})^T h(c_{t0+s})         [DK, DV], f32
// into chunk_states[(bh * window + c) * DK * DV ...]; the scan turns U_c into the state before
// chunk c. A product of [DK, len] and [len, DV]: TILE rows of the weighted g(b) and of h(c) at a
// time go through shared memory, and each invocation accumulates a 4 x 4 block of U_c.
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer B { sfloat b[]; };
layout(std430, binding = 1) readonly buffer C { sfloat c[]; };
layout(std430, binding = 2) readonly buffer Decay { float decay[]; };
layout(std430, binding = 3) writeonly buffer ChunkStates { float chunk_states[]; };

shared afloat weight[CHUNK];          // lambda^(len-1-s)
shared afloat b_tile[TILE * MAX_D];   // [s][i]: lambda^(len-1-s) g(b_s)_i
shared afloat c_tile[TILE * MAX_D];   // [s][j]: h(c_s)_j

void main() {
  const uint chunk = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint t0 = (p.first_chunk + chunk) * CHUNK;
  const uint len = min(CHUNK, p.n - t0);  // the dispatch covers whole chunks below n only
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  for (uint s = tid; s < len; s += WG_SIZE) weight[s] = HAS_DECAY ? pow(lambda, afloat(len - 1 - s)) : 1.0;
  const uint b_base = bh * p.n * p.dk, c_base = bh * p.n * p.dv;
  const uint out_base = (bh * p.window + chunk) * p.dk * p.dv;
  const uint blocks_j = (p.dv + 3) / 4, blocks = (p.dk + 3) / 4 * blocks_j;
  // Rounds of WG_SIZE blocks; every invocation takes part in the loads (barriers stay uniform).
  for (uint round = 0; round * WG_SIZE < blocks; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks;
    // Columns j0 + blocks_j q: neighbouring invocations read neighbouring words of c_tile.
    const uint i0 = owner ? blk / blocks_j * 4 : 0, j0 = owner ? blk % blocks_j : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) acc[r][q] = 0.0;
    for (uint s0 = 0; s0 < len; s0 += TILE) {
      const uint rows = min(TILE, len - s0);
      barrier();  // the previous tile (and the weights, first time) -> this tile's loads
      for (uint e = tid; e < rows * p.dk; e += WG_SIZE) {
        const uint s = e / p.dk, i = e % p.dk;
        b_tile[s * MAX_D + i] = weight[s0 + s] * la_f(PHI_B, afloat(b[b_base + la_row(t0 + s0 + s) * p.dk + i]));
      }
      for (uint e = tid; e < rows * p.dv; e += WG_SIZE) {
        const uint s = e / p.dv, j = e % p.dv;
        c_tile[s * MAX_D + j] = la_f(PHI_C, afloat(c[c_base + la_row(t0 + s0 + s) * p.dv + j]));
      }
      barrier();  // tile loaded -> read by every block owner
      if (!owner) continue;
      for (uint s = 0; s < rows; ++s) {
        afloat bv[4], cv[4];
        // Past the edge of DK or DV: a clamped (loaded) value, never written out.
        for (uint r = 0; r < 4; ++r) bv[r] = b_tile[s * MAX_D + min(i0 + r, p.dk - 1)];
        for (uint q = 0; q < 4; ++q) cv[q] = c_tile[s * MAX_D + min(j0 + blocks_j * q, p.dv - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint q = 0; q < 4; ++q) acc[r][q] += bv[r] * cv[q];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q)
        if (i0 + r < p.dk && j0 + blocks_j * q < p.dv)
          chunk_states[out_base + (i0 + r) * p.dv + j0 + blocks_j * q] = acc[r][q];
  }
}
