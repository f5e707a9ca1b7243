// Block attention backward for GPUs, one workgroup per (block, batch*head) and blocks up to 64: every
// gradient of the block in one dispatch, as shared-memory tile products with 4 x 4 blocks of
// results in each invocation's registers (the generic kernel gives each invocation a row and
// recomputes every score twice, from global memory, in two dispatches). With
// P[t][s] = exp(scale q_t.k_s - lse_t) over the block (s <= t when CAUSAL):
//   1. P from Q K^T and the saved lse, into `scores` (masked and out-of-block entries 0);
//   2. dV = P^T dO;
//   3. delta_t = do_t . o_t (also stored), dP = dO V^T block by block in registers, and in place
//      scores = dS = scale P (dP - delta): each entry is read and written by its block's owner only;
//   4. dQ = dS K;  5. dK = dS^T Q.
// Shared memory: the block's scores plus a TILE-wide tile of each operand, as in the forward.
// Dk, Dv <= 128; the buffers are in block_attention_bwd_io.glsl.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint BLOCK = 64;  // <= 64 (the scores live in shared memory)
layout(constant_id = 2) const bool CAUSAL = true;
layout(constant_id = 3) const uint TILE = 16;
layout(local_size_x_id = 0) in;
#define MAX_D 128u

#include "block_attention_bwd_io.glsl"

shared afloat scores[BLOCK * BLOCK];     // [t][s]: P, then dS
shared afloat row_tile[BLOCK * TILE];    // [row][x]: a TILE-wide slice of the block's rows
shared afloat other_tile[TILE * MAX_D];  // [row][x] slices (BLOCK <= MAX_D rows) or [x][col] tiles
shared afloat delta_row[BLOCK];

// The block's operands by index: 0 q, 1 k, 2 v, 3 do (rows of `width` elements).
const uint kQ = 0u, kK = 1u, kV = 2u, kDo = 3u;

uint len, qk_base, v_base, lse_base;

afloat operand(uint which, uint row, uint x) {
  if (which == kQ) return afloat(q[qk_base + row * p.dk + x]);
  if (which == kK) return afloat(k[qk_base + row * p.dk + x]);
  if (which == kV) return afloat(v[v_base + row * p.dv + x]);
  return afloat(dout[v_base + row * p.dv + x]);
}

bool in_mask(uint t, uint s) { return t < len && s < len && (!CAUSAL || s <= t); }

// acc[r][c] = sum over x < width of A[r0 + r][x] B[s0 + c][x] for the block's rows of A and B,
// a TILE-wide slice at a time. Every invocation calls it (it holds barriers); owners get results.
void rows_product(uint a, uint b, uint width, bool owner, uint r0, uint s0, inout afloat acc[4][4]) {
  const uint tid = gl_LocalInvocationID.x;
  for (uint x0 = 0; x0 < width; x0 += TILE) {
    const uint w = min(TILE, width - x0);
    barrier();  // the previous tiles (or scores) -> these loads
    for (uint e = tid; e < len * w; e += WG_SIZE) {
      const uint row = e / w, x = e % w;
      row_tile[row * TILE + x] = operand(a, row, x0 + x);
      other_tile[row * TILE + x] = operand(b, row, x0 + x);
    }
    barrier();  // tiles loaded -> read by every block owner
    if (!owner) continue;
    for (uint x = 0; x < w; ++x) {
      afloat av[4], bv[4];
      for (uint r = 0; r < 4; ++r) av[r] = row_tile[min(r0 + r, len - 1) * TILE + x];
      for (uint c = 0; c < 4; ++c) bv[c] = other_tile[min(s0 + c, len - 1) * TILE + x];
      for (uint r = 0; r < 4; ++r)
        for (uint c = 0; c < 4; ++c) acc[r][c] += av[r] * bv[c];
    }
  }
}

// out[r][c] = sum over x < len of M[r][x] B[x][c] (TRANSPOSED: M[x][r]) with M = scores and B the
// block's rows of operand b (width columns): 4 x 4 blocks of (r, c), TILE rows of B at a time.
// The result goes to dv (b = do), dq (b = k) or dk (b = q).
void scores_product(bool transposed, uint b, uint width) {
  const uint tid = gl_LocalInvocationID.x, blocks_r = (len + 3) / 4, blocks_c = (width + 3) / 4;
  for (uint round = 0; round * WG_SIZE < blocks_r * blocks_c; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_r * blocks_c;
    const uint r0 = owner ? blk / blocks_c * 4 : 0, c0 = owner ? blk % blocks_c * 4 : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
    for (uint x0 = 0; x0 < len; x0 += TILE) {
      const uint rows = min(TILE, len - x0);
      barrier();  // scores (first time) and the previous tile -> these loads
      for (uint e = tid; e < rows * width; e += WG_SIZE) {
        const uint x = e / width, c = e % width;
        other_tile[x * MAX_D + c] = operand(b, x0 + x, c);
      }
      barrier();  // tile loaded -> read by every block owner
      if (!owner) continue;
      for (uint x = 0; x < rows; ++x) {
        afloat mv[4], bv[4];
        for (uint r = 0; r < 4; ++r) {
          const uint rr = min(r0 + r, len - 1);
          mv[r] = transposed ? scores[(x0 + x) * BLOCK + rr] : scores[rr * BLOCK + x0 + x];
        }
        for (uint c = 0; c < 4; ++c) bv[c] = other_tile[x * MAX_D + min(c0 + c, width - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint c = 0; c < 4; ++c) acc[r][c] += mv[r] * bv[c];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        if (r0 + r >= len || c0 + c >= width) continue;
        const uint row = r0 + r, col = c0 + c;
        if (b == kDo) dv[v_base + row * p.dv + col] = sfloat(acc[r][c]);
        else if (b == kK) dq[qk_base + row * p.dk + col] = sfloat(acc[r][c]);
        else dk[qk_base + row * p.dk + col] = sfloat(acc[r][c]);
      }
  }
}

void main() {
  const uint bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint b0 = gl_WorkGroupID.x * BLOCK;
  len = min(BLOCK, p.n - b0);
  qk_base = (bh * p.n + b0) * p.dk;
  v_base = (bh * p.n + b0) * p.dv;
  lse_base = bh * p.n + b0;
  const uint blocks_t = (len + 3) / 4;

  // 1. P, 4 x 4 blocks of (t, s); 3. dS in place. One round each for blocks up to 64 at WG 256.
  for (uint round = 0; round * WG_SIZE < blocks_t * blocks_t; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_t;
    const uint t0 = owner ? blk / blocks_t * 4 : 0, s0 = owner ? blk % blocks_t * 4 : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
    rows_product(kQ, kK, p.dk, owner, t0, s0, acc);
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        const uint t = t0 + r, s = s0 + c;
        if (t < len && s < len)
          scores[t * BLOCK + s] = in_mask(t, s) ? exp(acc[r][c] * p.scale - lse[lse_base + t]) : 0.0;
      }
  }

  // 2. dV = P^T dO (its first barrier orders the scores above before their reads).
  scores_product(true, kDo, p.dv);

  // 3. delta_t = do_t . o_t, then dS = scale P (dP - delta) with dP = dO V^T.
  for (uint t = tid; t < len; t += WG_SIZE) {
    afloat d = 0.0;
    for (uint j = 0; j < p.dv; ++j) d += operand(kDo, t, j) * afloat(o[v_base + t * p.dv + j]);
    delta_row[t] = d;
    delta[lse_base + t] = d;
  }
  for (uint round = 0; round * WG_SIZE < blocks_t * blocks_t; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_t;
    const uint t0 = owner ? blk / blocks_t * 4 : 0, s0 = owner ? blk % blocks_t * 4 : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
    rows_product(kDo, kV, p.dv, owner, t0, s0, acc);  // its barriers order delta_row and dV's reads
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        const uint t = t0 + r, s = s0 + c;
        if (t < len && s < len) scores[t * BLOCK + s] *= (acc[r][c] - delta_row[t]) * p.scale;
      }
  }

  // 4. dQ = dS K;  5. dK = dS^T Q.
  scores_product(false, kK, p.dk);
  scores_product(true, kQ, p.dk);
}
