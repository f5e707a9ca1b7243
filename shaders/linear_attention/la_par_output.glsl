// Parallel chunked linear attention, pass 3 of 3 (la_par_common.glsl has the form): every chunk's
// outputs at once, from the state before the chunk (P_c, left in chunk_states by la_par_scan) and
// the chunk's own positions. Workgroup (c, bh), mapped positions t0 + t for t < len:
//   out_{t0+t} = lambda^(t+1) f(a_{t0+t}) P_c + sum_{s<=t} lambda^(t-s) (f(a_{t0+t}) . g(b_{t0+s})) h(c_{t0+s})
// times phi'(x_{t0+t}) elementwise with GRAD_SCALE (the backward's dq and dk). Three products
// through shared-memory tiles, each invocation accumulating 4 x 4 blocks in registers:
//   1. the causal scores [len, len] = f(A) g(B)^T (masked, decayed), kept in shared memory;
//   2. f(A) P_c [len, DV], TILE slices of the inner dimension at a time, scaled by lambda^(t+1);
//   3. plus scores h(C) [len, DV], TILE rows of h(C) at a time.
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

shared afloat scores[CHUNK * CHUNK];                     // [t][s]
shared afloat power[CHUNK + 1];                          // lambda^m
const uint AROW = TILE + 1;                              // a_tile's padded row (banks again)
shared afloat a_tile[CHUNK * AROW];                      // [t][k]: f(a_t) on TILE inner slices
// [k][s] g(b) (rows padded to CHUNK + 1 <= MAX_D), then [k][j] P, then [s][j] h(c). Result columns
// are strided over the invocations and g(b) is stored transposed, so neighbouring invocations read
// neighbouring words (la_par_common.glsl: shared-memory banks).
shared afloat other_tile[TILE * MAX_D];
const uint BROW = CHUNK + 1;

// a_tile[t][kk] = f(a_{t0+t, k0+kk}) for t < len, kk < width.
void load_a_tile(uint ab_base, uint t0, uint len, uint k0, uint width) {
  for (uint e = gl_LocalInvocationID.x; e < len * width; e += WG_SIZE) {
    const uint t = e / width, kk = e % width;
    a_tile[t * AROW + kk] = la_f(PHI_A, afloat(a[ab_base + la_row(t0 + t) * p.dk + k0 + kk]));
  }
}

void main() {
  const uint chunk = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint t0 = (p.first_chunk + chunk) * CHUNK;
  const uint len = min(CHUNK, p.n - t0);
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint ab_base = bh * p.n * p.dk, c_base = bh * p.n * p.dv;
  const uint state_base = (CAUSAL ? bh * p.window + chunk : bh) * p.dk * p.dv;
  for (uint m = tid; m <= len; m += WG_SIZE) power[m] = HAS_DECAY ? pow(lambda, afloat(m)) : 1.0;
  const uint blocks_t = (len + 3) / 4;

  // 1. Scores: 4 x 4 blocks of (t, s).
  for (uint round = 0; CAUSAL && round * WG_SIZE < blocks_t * blocks_t; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_t;
    const uint r0 = owner ? blk / blocks_t * 4 : 0, s0 = owner ? blk % blocks_t : 0;  // columns s0 + blocks_t q
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) acc[r][q] = 0.0;
    for (uint k0 = 0; k0 < p.dk; k0 += TILE) {
      const uint width = min(TILE, p.dk - k0);
      barrier();  // the previous tiles -> these loads
      load_a_tile(ab_base, t0, len, k0, width);
      for (uint e = tid; e < len * width; e += WG_SIZE) {
        const uint s = e / width, kk = e % width;
        other_tile[kk * BROW + s] = la_f(PHI_B, afloat(b[ab_base + la_row(t0 + s) * p.dk + k0 + kk]));
      }
      barrier();  // tiles loaded -> read by every block owner
      if (!owner) continue;
      for (uint kk = 0; kk < width; ++kk) {
        afloat av[4], bv[4];
        for (uint r = 0; r < 4; ++r) av[r] = a_tile[min(r0 + r, len - 1) * AROW + kk];
        for (uint q = 0; q < 4; ++q) bv[q] = other_tile[kk * BROW + min(s0 + blocks_t * q, len - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint q = 0; q < 4; ++q) acc[r][q] += av[r] * bv[q];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint q = 0; q < 4; ++q) {
        const uint t = r0 + r, s = s0 + blocks_t * q;
        if (t < len && s < len) scores[t * CHUNK + s] = s <= t ? acc[r][q] * power[t - s] : 0.0;
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
    for (uint k0 = 0; k0 < p.dk; k0 += TILE) {
      const uint width = min(TILE, p.dk - k0);
      barrier();  // the previous tiles (and the scores) -> these loads
      load_a_tile(ab_base, t0, len, k0, width);
      for (uint e = tid; e < width * p.dv; e += WG_SIZE) {
        // Along the stored rows: j fastest, or kk fastest when the state is stored transposed.
        const uint kk = STATE_TRANSPOSED ? e % width : e / p.dv, j = STATE_TRANSPOSED ? e / width : e % p.dv;
        other_tile[kk * MAX_D + j] =
            chunk_states[state_base + (STATE_TRANSPOSED ? j * p.dk + k0 + kk : (k0 + kk) * p.dv + j)];
      }
      barrier();  // tiles loaded -> read by every block owner
      if (!owner) continue;
      for (uint kk = 0; kk < width; ++kk) {
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
    for (uint s0 = 0; CAUSAL && s0 < len; s0 += TILE) {
      const uint rows = min(TILE, len - s0);
      barrier();  // the previous tiles -> these loads
      for (uint e = tid; e < rows * p.dv; e += WG_SIZE) {
        const uint s = e / p.dv, j = e % p.dv;
        other_tile[s * MAX_D + j] = la_f(PHI_C, afloat(c[c_base + la_row(t0 + s0 + s) * p.dv + j]));
      }
      barrier();  // tile loaded -> read by every block owner
      if (!owner) continue;
      for (uint s = 0; s < rows; ++s) {
        afloat sv[4], cv[4];
        for (uint r = 0; r < 4; ++r) sv[r] = scores[min(r0 + r, len - 1) * CHUNK + s0 + s];
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
