// Parallel chunked linear attention, pass 3 of 3 (la_par_common.glsl has the form): every chunk's
// outputs at once, from the state before the chunk (P_c, left in chunk_states by la_par_scan) and
// the chunk's own positions. Workgroup (c, bh), mapped positions t0 + t for t < len:
//   out_{t0+t} = lambda^(t+1) f(a_{t0+t}) P_c + sum_{s<=t} lambda^(t-s) (f(a_{t0+t}) . g(b_{t0+s})) h(c_{t0+s})
// times phi'(x_{t0+t}) elementwise with GRAD_SCALE (the backward's dq and dk). Three products
// through shared-memory tiles, each invocation accumulating 4 x 4 blocks in registers:
//   1. the causal scores [len, len] = f(A) g(B)^T (masked, decayed), kept in shared memory; a
//      block's columns that lie wholly past its rows are not multiplied;
//   2. f(A) P_c [len, DV], TILE slices of the inner dimension at a time, scaled by lambda^(t+1);
//   3. plus scores h(C) [len, DV], TILE rows of h(C) at a time, each block only up to its own
//      last row (the causal mask's zeros are skipped).
// Without CAUSAL (the non-causal form, never decayed) every position sees the whole sequence:
// out_t = f(a_t) S with S the total state, which la_par_scan leaves in the state buffer (bound as
// chunk_states, one per head); only product 2 runs. With STATE_TRANSPOSED the states were made by
// another form whose state is this one's transpose (stored [DV, DK]; the backward's dk and dv).
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 9) const bool GRAD_SCALE = false;
layout(constant_id = 11) const bool CAUSAL = true;
layout(constant_id = 12) const bool STATE_TRANSPOSED = false;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) readonly buffer C { sfloat c[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) readonly buffer ChunkStates { float chunk_states[]; };
layout(std430, binding = 5) readonly buffer X { sfloat x[]; };  // GRAD_SCALE: phi' of x scales out
layout(std430, binding = 6) writeonly buffer Out { sfloat out_[]; };

// [t][s], rows padded by one word: product 3's invocations read 2-4 rows 4 apart at once (heads of
// 64 and 32), which unpadded all fall in one bank (a 2- to 4-way conflict on every read).
const uint SROW = CHUNK + 1;
shared afloat scores[CHUNK * SROW];
shared afloat power[CHUNK + 1];                          // lambda^m
const uint AROW = TILE + 1;                              // a_tile's padded row (banks again)
shared afloat a_tile[CHUNK * AROW];                      // [t][k]: f(a_t) on TILE inner slices
// [k][s] g(b) (rows padded to CHUNK + 1 <= MAX_D), then [k][j] P, then [s][j] h(c). Result columns
// are strided over the invocations and g(b) is stored transposed, so neighbouring invocations read
// neighbouring words (la_par_common.glsl: shared-memory banks).
shared afloat other_tile[TILE * MAX_D];
const uint BROW = CHUNK + 1;

// Global memory is the wait in the tile loops below: each tile's loads are issued into registers
// before the products on the tile before it (fetch_*), and stored into shared memory after the next
// barrier (store_*), so a tile costs one wait overlapped with arithmetic instead of a wait between
// two barriers. The elements e = tid + i WG_SIZE of one tile an invocation carries (unrolled: the
// arrays stay in registers): chunk-row tiles are at most CHUNK x TILE, the others TILE x MAX_D.
#extension GL_EXT_control_flow_attributes : require
const uint ROW_PREFETCH = (CHUNK * TILE + WG_SIZE - 1) / WG_SIZE;
const uint WIDE_PREFETCH = (TILE * MAX_D + WG_SIZE - 1) / WG_SIZE;
uint ab_base, c_base, state_base, t0, len;

// f(a_{t0+t, k0+kk}) (a_tile) or g(b_{t0+t, k0+kk}) (the scores' transposed B tile), t < len, kk < width.
void fetch_rows(bool is_a, uint k0, uint width, out afloat r[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, t = e / width, kk = e % width;
    r[i] = e < len * width ? (is_a ? la_f(PHI_A, afloat(a[ab_base + la_row(t0 + t) * p.dk + k0 + kk]))
                                   : la_f(PHI_B, afloat(b[ab_base + la_row(t0 + t) * p.dk + k0 + kk])))
                           : 0.0;
  }
}
void store_a(uint width, afloat r[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE;
    if (e < len * width) a_tile[(e / width) * AROW + e % width] = r[i];
  }
}
void store_b(uint width, afloat r[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE;
    if (e < len * width) other_tile[(e % width) * BROW + e / width] = r[i];
  }
}

// Rows k0 .. k0 + width - 1 of P_c (along the stored rows: j fastest, or kk fastest when the state
// is stored transposed), or rows s0 .. s0 + width - 1 of h(C); into other_tile[row][j].
void fetch_wide(bool is_state, uint row0, uint width, out afloat r[WIDE_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < WIDE_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE;
    if (e >= width * p.dv) {
      r[i] = 0.0;
    } else if (is_state) {
      const uint kk = STATE_TRANSPOSED ? e % width : e / p.dv, j = STATE_TRANSPOSED ? e / width : e % p.dv;
      r[i] = chunk_states[state_base + (STATE_TRANSPOSED ? j * p.dk + row0 + kk : (row0 + kk) * p.dv + j)];
    } else {
      r[i] = la_f(PHI_C, afloat(c[c_base + la_row(t0 + row0 + e / p.dv) * p.dv + e % p.dv]));
    }
  }
}
void store_wide(bool is_state, uint width, afloat r[WIDE_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < WIDE_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE;
    if (e >= width * p.dv) continue;
    const uint kk = is_state && STATE_TRANSPOSED ? e % width : e / p.dv;
    const uint j = is_state && STATE_TRANSPOSED ? e / width : e % p.dv;
    other_tile[kk * MAX_D + j] = r[i];
  }
}

void main() {
  const uint chunk = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  t0 = (p.first_chunk + chunk) * CHUNK;
  len = min(CHUNK, p.n - t0);
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  ab_base = bh * p.n * p.dk;
  c_base = bh * p.n * p.dv;
  state_base = (CAUSAL ? bh * p.window + chunk : bh) * p.dk * p.dv;
  for (uint m = tid; m <= len; m += WG_SIZE) power[m] = HAS_DECAY ? pow(lambda, afloat(m)) : 1.0;
  const uint blocks_t = (len + 3) / 4;

  // 1. Scores: 4 x 4 blocks of (t, s).
  for (uint round = 0; CAUSAL && round * WG_SIZE < blocks_t * blocks_t; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_t;
    const uint r0 = owner ? blk / blocks_t * 4 : 0, s0 = owner ? blk % blocks_t : 0;  // columns s0 + blocks_t q
    // Columns q with blocks_t q > r0 + 3 lie past every row of the block for every s0: masked, left
    // at zero. The bound depends on r0 only, shared by blocks_t neighbouring invocations.
    const uint live_q = min(4u, (r0 + 3u) / blocks_t + 1u);
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) acc[r][q] = 0.0;
    afloat next_a[ROW_PREFETCH], next_b[ROW_PREFETCH];
    uint width = min(TILE, p.dk);
    fetch_rows(true, 0, width, next_a);
    fetch_rows(false, 0, width, next_b);
    for (uint k0 = 0; k0 < p.dk; k0 += TILE) {
      barrier();  // the previous tiles read -> overwritten
      store_a(width, next_a);
      store_b(width, next_b);
      barrier();  // tiles stored -> read by every block owner
      const uint width_now = width;
      if (k0 + TILE < p.dk) {  // the next slice's loads, in flight during the products below
        width = min(TILE, p.dk - k0 - TILE);
        fetch_rows(true, k0 + TILE, width, next_a);
        fetch_rows(false, k0 + TILE, width, next_b);
      }
      if (!owner) continue;
      for (uint kk = 0; kk < width_now; ++kk) {
        afloat av[4], bv[4];
        for (uint r = 0; r < 4; ++r) av[r] = a_tile[min(r0 + r, len - 1) * AROW + kk];
        for (uint q = 0; q < 4; ++q)
          if (q < live_q) bv[q] = other_tile[kk * BROW + min(s0 + blocks_t * q, len - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint q = 0; q < 4; ++q)
            if (q < live_q) acc[r][q] += av[r] * bv[q];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) {
        const uint t = r0 + r, s = s0 + blocks_t * q;
        if (t < len && s < len) scores[t * SROW + s] = s <= t ? acc[r][q] * power[t - s] : 0.0;
      }
  }

  // 2 and 3. Outputs: 4 x 4 blocks of (t, j).
  const uint blocks_j = (p.dv + 3) / 4;
  for (uint round = 0; round * WG_SIZE < blocks_t * blocks_j; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_j;
    const uint r0 = owner ? blk / blocks_j * 4 : 0, j0 = owner ? blk % blocks_j : 0;  // columns j0 + blocks_j q
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) acc[r][q] = 0.0;
    // f(A) P_c over TILE slices of the inner dimension.
    afloat next_a[ROW_PREFETCH], next_p[WIDE_PREFETCH];
    uint width = min(TILE, p.dk);
    fetch_rows(true, 0, width, next_a);
    fetch_wide(true, 0, width, next_p);
    for (uint k0 = 0; k0 < p.dk; k0 += TILE) {
      barrier();  // the previous tiles (and the scores) read -> overwritten
      store_a(width, next_a);
      store_wide(true, width, next_p);
      barrier();  // tiles stored -> read by every block owner
      const uint width_now = width;
      if (k0 + TILE < p.dk) {  // the next slice's loads, in flight during the products below
        width = min(TILE, p.dk - k0 - TILE);
        fetch_rows(true, k0 + TILE, width, next_a);
        fetch_wide(true, k0 + TILE, width, next_p);
      }
      if (!owner) continue;
      for (uint kk = 0; kk < width_now; ++kk) {
        afloat av[4], pv[4];
        for (uint r = 0; r < 4; ++r) av[r] = a_tile[min(r0 + r, len - 1) * AROW + kk];
        for (uint q = 0; q < 4; ++q) pv[q] = other_tile[kk * MAX_D + min(j0 + blocks_j * q, p.dv - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint q = 0; q < 4; ++q) acc[r][q] += av[r] * pv[q];
      }
    }
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) acc[r][q] *= power[min(r0 + r, len - 1) + 1];
    // Plus the causal scores times h(C), TILE rows of h(C) at a time.
    afloat next_c[WIDE_PREFETCH];
    uint rows = min(TILE, len);
    if (CAUSAL) fetch_wide(false, 0, rows, next_c);
    for (uint s0 = 0; CAUSAL && s0 < len; s0 += TILE) {
      barrier();  // the previous tiles read -> overwritten
      store_wide(false, rows, next_c);
      barrier();  // tile stored -> read by every block owner
      const uint rows_now = rows;
      if (s0 + TILE < len) {  // the next rows' loads, in flight during the products below
        rows = min(TILE, len - s0 - TILE);
        fetch_wide(false, s0 + TILE, rows, next_c);
      }
      if (!owner) continue;
      // scores[t][s] is 0 for s > t: rows of h(C) past the block's last row r0 + 3 add nothing. An
      // owner's rows are shared by the blocks_j neighbouring invocations, so whole subgroups stop
      // together, and the causal half of the product is skipped rather than multiplied by zero.
      const uint rows_needed = min(rows_now, r0 + 4u > s0 ? r0 + 4u - s0 : 0u);
      for (uint s = 0; s < rows_needed; ++s) {
        afloat sv[4], cv[4];
        for (uint r = 0; r < 4; ++r) sv[r] = scores[min(r0 + r, len - 1) * SROW + s0 + s];
        for (uint q = 0; q < 4; ++q) cv[q] = other_tile[s * MAX_D + min(j0 + blocks_j * q, p.dv - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint q = 0; q < 4; ++q) acc[r][q] += sv[r] * cv[q];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) {
        const uint t = r0 + r, j = j0 + blocks_j * q;
        if (t >= len || j >= p.dv) continue;
        const uint at = c_base + la_row(t0 + t) * p.dv + j;
        afloat val = acc[r][q];
        if (GRAD_SCALE) val *= phi_grad(afloat(x[at]));
        out_[at] = sfloat(val);
      }
  }
}
