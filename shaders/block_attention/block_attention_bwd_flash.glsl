// Block attention backward for GPUs with blocks past 64, flash-style (the tiled kernel keeps a whole
// block's scores in shared memory, which holds 64 x 64): two dispatches of 64-row tiles, each
// pair of a query tile and a key tile through the shared-memory tile products of
// block_attention_tiles.glsl, with P[t][s] = exp(scale q_t.k_s - lse_t) (s <= t when CAUSAL) and
// dS = scale P (dP - delta), dP = dO V^T:
//   KIND 0, a workgroup per query tile: delta_t = do_t . o_t (stored), then over the block's key
//     tiles (causal: up to its own) P, dS in place, and dQ += dS K in registers;
//   KIND 1, a workgroup per key tile, after KIND 0 (it reads delta): over the query tiles (causal:
//     from its own on) P, dV += P^T dO, dS in place, and dK += dS^T Q in registers.
// Dk, Dv <= 128; the buffers are in block_attention_bwd_io.glsl.
#include "rill_common.glsl"
#include "block_attention_bwd_io.glsl"
#include "block_attention_tiles.glsl"  // the specialization constants and shared tiles
layout(constant_id = 6) const uint KIND = 0;

// The operands by index: 0 q, 1 k, 2 v, 3 do (rows of `width` elements).
const uint kQ = 0u, kK = 1u, kV = 2u, kDo = 3u;

shared afloat delta_row[ROWS];
uint q_row0, k_row0, q_rows, k_rows;  // the tiles' first rows in q (o, do) and k (v), and their rows

// Rows past a tile's own read as zeros, so that a partial tile's products add nothing.
afloat operand(uint which, uint row, uint x) {
  if (which == kQ) return row < q_rows ? afloat(q[(q_row0 + row) * DK + x]) : 0.0;
  if (which == kK) return row < k_rows ? afloat(k[(k_row0 + row) * DK + x]) : 0.0;
  if (which == kV) return row < k_rows ? afloat(v[(k_row0 + row) * DV + x]) : 0.0;
  return row < q_rows ? afloat(dout[(q_row0 + row) * DV + x]) : 0.0;
}

// The products' results by their operand b: dQ = dS K, dV = P^T dO, dK = dS^T Q.
void store_result(uint b, uint row, uint col, afloat value) {
  if (b == kK) dq[(q_row0 + row) * DK + col] = to_sfloat(value);
  else if (b == kDo) dv[(k_row0 + row) * DV + col] = to_sfloat(value);
  else dk[(k_row0 + row) * DK + col] = to_sfloat(value);
}

// P and then dS for the current pair of tiles into the scores, 4 x 4 blocks of (t, s); every entry,
// zero outside the tiles' rows and the mask. Every invocation calls it (it holds barriers).
void pair_scores(bool diagonal) {
  for (uint round = 0; round < score_rounds(); ++round) {
    uint t0, s0, step;
    afloat acc[4][4];
    if (!score_block(round, kQ, kK, DK, diagonal, t0, s0, step, acc)) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        const uint t = t0 + r, s = s0 + step * c;
        const bool live = t < q_rows && s < k_rows && (!diagonal || s <= t);
        set_score(t, s, live ? exp(acc[r][c] * p.scale - lse[q_row0 + min(t, q_rows - 1u)]) : 0.0);
      }
  }
}
void pair_ds(bool diagonal) {
  for (uint round = 0; round < score_rounds(); ++round) {
    uint t0, s0, step;
    afloat acc[4][4];
    // Its barriers order delta_row and the products' reads of P before the overwrite; each entry is
    // read and written by its block's owner only.
    if (!score_block(round, kDo, kV, DV, diagonal, t0, s0, step, acc)) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        const uint t = t0 + r, s = s0 + step * c;
        set_score(t, s, score(t, s) * (acc[r][c] - delta_row[t]) * p.scale);
      }
  }
}

void zero(inout afloat acc[4][4]) {
  for (uint r = 0; r < 4; ++r)
    for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
}
void store_rounds(uint b, uint width, uint rows, afloat acc[4][4], uint round) {
  uint r0, c0;
  if (!product_block(round, width, r0, c0)) return;
  const uint blocks_c = blocks_across(width);
  for (uint r = 0; r < 4; ++r)
    for (uint c = 0; c < 4; ++c)
      if (r0 + r < rows && c0 + blocks_c * c < width) store_result(b, r0 + r, c0 + blocks_c * c, acc[r][c]);
}

void main() {
  const uint bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint b0 = gl_WorkGroupID.x * BLOCK, own = gl_WorkGroupID.z;  // z: the block's tiles
  const uint block_len = min(BLOCK, p.n - b0), tiles = (block_len + ROWS - 1u) / ROWS;
  if (own >= tiles) return;  // a partial last block's missing tiles (the whole workgroup)
  len = ROWS;
  const uint first_row = bh * p.n + b0;
  if (KIND == 0u) {
    q_rows = min(ROWS, block_len - own * ROWS);
    q_row0 = first_row + own * ROWS;
    for (uint t = tid; t < ROWS; t += WG_SIZE) {
      afloat d = 0.0;
      for (uint j = 0; t < q_rows && j < DV; ++j)
        d += operand(kDo, t, j) * afloat(o[(q_row0 + t) * DV + j]);
      delta_row[t] = d;
      if (t < q_rows) delta[q_row0 + t] = d;
    }
    // The result rounds of block_attention_tiles.glsl (those of the wider head: with Dk < Dv some
    // of dQ's rounds own no block).
    afloat acc[ROUNDS][4][4];
    [[unroll]] for (uint i = 0; i < ROUNDS; ++i) zero(acc[i]);
    const uint last = CAUSAL ? own : tiles - 1u;
    for (uint kt = 0; kt <= last; ++kt) {
      k_rows = min(ROWS, block_len - kt * ROWS);
      k_row0 = first_row + kt * ROWS;
      const bool diagonal = CAUSAL && kt == own;
      pair_scores(diagonal);
      pair_ds(diagonal);
      products(false, diagonal, kK, DK, acc);
    }
    [[unroll]] for (uint i = 0; i < ROUNDS; ++i) store_rounds(kK, DK, q_rows, acc[i], i);
  } else {
    k_rows = min(ROWS, block_len - own * ROWS);
    k_row0 = first_row + own * ROWS;
    afloat acc_k[ROUNDS][4][4], acc_v[ROUNDS][4][4];
    [[unroll]] for (uint i = 0; i < ROUNDS; ++i) {
      zero(acc_k[i]);
      zero(acc_v[i]);
    }
    for (uint qt = CAUSAL ? own : 0u; qt < tiles; ++qt) {
      q_rows = min(ROWS, block_len - qt * ROWS);
      q_row0 = first_row + qt * ROWS;
      const bool diagonal = CAUSAL && qt == own;
      // The query tile's deltas (KIND 0's); the previous tile's reads of them came before the
      // products' barriers.
      for (uint t = tid; t < ROWS; t += WG_SIZE) delta_row[t] = t < q_rows ? delta[q_row0 + t] : 0.0;
      pair_scores(diagonal);
      products(true, diagonal, kDo, DV, acc_v);
      pair_ds(diagonal);
      products(true, diagonal, kQ, DK, acc_k);
    }
    [[unroll]] for (uint i = 0; i < ROUNDS; ++i) {
      store_rounds(kDo, DV, k_rows, acc_v[i], i);
      store_rounds(kQ, DK, k_rows, acc_k[i], i);
    }
  }
}
