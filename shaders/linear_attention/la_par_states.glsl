// Parallel chunked linear attention, pass 1 of 3 (la_par_common.glsl has the form; la_par_scan.comp
// is pass 2, la_par_output.glsl pass 3): every chunk's own state, all chunks at once,
//   U_c = sum_{s < len} lambda^(len-1-s) g(b_{t0+s})^T h(c_{t0+s})         [DK, DV], f32
// for chunk c of the window, mapped positions t0 .. t0 + len - 1. A product of [DK, len] and
// [len, DV]: TILE rows of the weighted g(b) and of h(c) at a time go through shared memory, and
// each invocation accumulates a 4 x 4 block of U_c. Workgroup (r, bh) takes span r of SPAN chunks
// (la_par_common.glsl): with SPAN 1 it writes U_c into chunk_states[(bh * window + c) * DK * DV ...]
// (the scan turns it into the state before chunk c); with SPAN > 1 it walks the span's chunks
// keeping
//   R <- lambda^len_c R + U_c     (from zero)
// in registers, writes R before each chunk (L_c; with LOCAL_PREFIXES, which the causal form reads)
// at the chunk's place and R after the span at states_base + (bh * spans + r) * DK * DV.
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 17) const bool LOCAL_PREFIXES = false;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer B { sfloat b[]; };
layout(std430, binding = 1) readonly buffer C { sfloat c[]; };
layout(std430, binding = 2) readonly buffer Decay { float decay[]; };
layout(std430, binding = 3) writeonly buffer ChunkStates { float chunk_states[]; };

shared afloat weight[CHUNK];          // lambda^(len-1-s)
// Rows of the head's own widths (constants): a tile of heads narrower than MAX_D takes only their
// shared memory, so that deeper tiles fit (kernel_plan_attention.cpp counts the same).
shared afloat b_tile[TILE * DK];  // [s][i]: lambda^(len-1-s) g(b_s)_i
shared afloat c_tile[TILE * DV];  // [s][j]: h(c_s)_j

// Each tile's loads are issued into registers before the products on the tile before it, and
// stored after the next barrier (as in la_par_output.glsl): one wait on memory overlapped with
// arithmetic per tile instead of one between two barriers. Slot e = tid + i WG_SIZE of the
// TILE x DK (or TILE x DV) tile is row e / DK, column e % DK: constants, so shifts or
// multiplications. Slots past the tile's rows load a clamped row and are never stored.
#extension GL_EXT_control_flow_attributes : require
const uint B_PREFETCH = (TILE * DK + WG_SIZE - 1) / WG_SIZE;
const uint C_PREFETCH = (TILE * DV + WG_SIZE - 1) / WG_SIZE;
uint b_base, c_base, t0, len;

void fetch_tile(uint s0, out afloat nb[B_PREFETCH], out afloat nc[C_PREFETCH]) {
  const uint last = len - 1u - s0;  // the tile's last real row
  [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, s = min(e / DK, last);
    nb[i] = la_f(PHI_B, afloat(b[b_base + la_row(t0 + s0 + s) * DK + e % DK]));
  }
  [[unroll]] for (uint i = 0; i < C_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, s = min(e / DV, last);
    nc[i] = la_f(PHI_C, afloat(c[c_base + la_row(t0 + s0 + s) * DV + e % DV]));
  }
}
void store_tile(uint s0, uint rows, afloat nb[B_PREFETCH], afloat nc[C_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, s = e / DK;
    if (s < rows) b_tile[s * DK + e % DK] = weight[s0 + s] * nb[i];
  }
  [[unroll]] for (uint i = 0; i < C_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, s = e / DV;
    if (s < rows) c_tile[s * DV + e % DV] = nc[i];
  }
}

void main() {
  const uint span = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint first = span * SPAN, end = min(first + SPAN, p.window);  // the span's chunks of the window
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  b_base = bh * p.n * DK;
  c_base = bh * p.n * DV;
  const uint elements = DK * DV;
  const uint span_base = p.states_base + (bh * spans_in_window() + span) * elements;
  const uint blocks_j = (DV + 3) / 4, blocks = (DK + 3) / 4 * blocks_j;
  // Rounds of WG_SIZE blocks; every invocation takes part in the loads (barriers stay uniform).
  for (uint round = 0; round * WG_SIZE < blocks; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks;
    // Columns j0 + blocks_j q: neighbouring invocations read neighbouring words of c_tile.
    const uint i0 = owner ? blk / blocks_j * 4 : 0, j0 = owner ? blk % blocks_j : 0;
    afloat span_acc[4][4];  // R: the span's state so far
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) span_acc[r][q] = 0.0;
    for (uint chunk = first; chunk < end; ++chunk) {
      t0 = (p.first_chunk + chunk) * CHUNK;
      len = min(CHUNK, p.n - t0);  // the dispatch covers whole chunks below n only
      // The previous chunk's weights were last read before its last tile's second barrier.
      for (uint s = tid; s < len; s += WG_SIZE) weight[s] = HAS_DECAY ? decay_pow(lambda, afloat(len - 1 - s)) : 1.0;
      afloat acc[4][4];
      for (uint r = 0; r < 4; ++r)
        for (uint q = 0; q < 4; ++q) acc[r][q] = 0.0;
      afloat next_b[B_PREFETCH], next_c[C_PREFETCH];
      fetch_tile(0, next_b, next_c);
      for (uint s0 = 0; s0 < len; s0 += TILE) {
        const uint rows = min(TILE, len - s0);
        barrier();  // the previous tile read (and the weights written, first time) -> overwritten
        store_tile(s0, rows, next_b, next_c);
        barrier();  // tile stored -> read by every block owner
        if (s0 + TILE < len) fetch_tile(s0 + TILE, next_b, next_c);  // in flight during the products
        if (!owner) continue;
        for (uint s = 0; s < rows; ++s) {
          afloat bv[4], cv[4];
          // Past the edge of DK or DV: a clamped (loaded) value, never written out.
          for (uint r = 0; r < 4; ++r) bv[r] = b_tile[s * DK + min(i0 + r, DK - 1)];
          for (uint q = 0; q < 4; ++q) cv[q] = c_tile[s * DV + min(j0 + blocks_j * q, DV - 1)];
          for (uint r = 0; r < 4; ++r)
            for (uint q = 0; q < 4; ++q) acc[r][q] += bv[r] * cv[q];
        }
      }
      if (!owner) continue;
      const afloat chunk_decay = HAS_DECAY ? decay_pow(lambda, afloat(len)) : 1.0;
      const uint local_base = (bh * p.window + chunk) * elements;
      for (uint r = 0; r < 4; ++r)
        for (uint q = 0; q < 4; ++q) {
          if (SPAN > 1u && LOCAL_PREFIXES && i0 + r < DK && j0 + blocks_j * q < DV)
            chunk_states[local_base + (i0 + r) * DV + j0 + blocks_j * q] = span_acc[r][q];
          span_acc[r][q] = chunk_decay * span_acc[r][q] + acc[r][q];
        }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q)
        if (i0 + r < DK && j0 + blocks_j * q < DV) chunk_states[span_base + (i0 + r) * DV + j0 + blocks_j * q] = span_acc[r][q];
  }
}
