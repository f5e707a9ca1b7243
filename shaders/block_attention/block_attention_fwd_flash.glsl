// Block attention forward for GPUs with blocks past 64, flash-style: the tiled kernel keeps a whole
// block's scores in shared memory, which holds 64 x 64 of them, so here one workgroup takes a
// 64-row query tile of a block (per batch*head; the tiles in z) and walks the block's 64-key tiles (causal: up to
// its own), each through the shared-memory tile products of block_attention_tiles.glsl:
//   1. logits S = scale Q K^T for the tile pair (the diagonal pair masked when CAUSAL);
//   2. the online softmax per row: the running maximum m and sum l (shared), P = exp(S - m_new),
//      and the factor exp(m_old - m_new) by which the row's accumulators shrink when m grows;
//   3. O = alpha O + P V into 4 x 4 register blocks that stay in registers over the whole walk.
// Then O / l and lse = m + log(l). q, k: [BH, N, Dk], v, o: [BH, N, Dv] sfloat with Dk, Dv <= 128;
// lse: [BH, N] f32 (block_attention_fwd_io.glsl).
#include "rill_common.glsl"
#include "block_attention_fwd_io.glsl"
#include "block_attention_tiles.glsl"  // the specialization constants and shared tiles

const uint kQ = 0u, kK = 1u, kV = 2u;

uint q_row0, k_row0, q_rows, k_rows;  // the tiles' first rows in q (and o) and k, and their rows

// Rows past a tile's own read as zeros, so that a partial tile's products add nothing.
afloat operand(uint which, uint row, uint x) {
  if (which == kQ) return row < q_rows ? afloat(q[(q_row0 + row) * DK + x]) : 0.0;
  if (which == kK) return row < k_rows ? afloat(k[(k_row0 + row) * DK + x]) : 0.0;
  return row < k_rows ? afloat(v[(k_row0 + row) * DV + x]) : 0.0;
}

void store_result(uint b, uint row, uint col, afloat value) { o[(q_row0 + row) * DV + col] = to_sfloat(value); }

// The softmax's invocations per row and their partial maxima or sums; each row's running maximum
// and sum, and the factor its accumulators take at this key tile.
const uint PARTS = WG_SIZE / ROWS >= 8u ? 8u : (WG_SIZE / ROWS == 0u ? 1u : WG_SIZE / ROWS);
shared afloat row_part[WG_SIZE];
shared afloat row_max[ROWS], row_sum[ROWS], row_alpha[ROWS];

void main() {
  const uint bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint b0 = gl_WorkGroupID.x * BLOCK, qt = gl_WorkGroupID.z;  // z: the block's query tiles
  const uint block_len = min(BLOCK, p.n - b0);
  if (qt * ROWS >= block_len) return;  // a partial last block's missing tiles (the whole workgroup)
  len = ROWS;
  q_rows = min(ROWS, block_len - qt * ROWS);
  q_row0 = bh * p.n + b0 + qt * ROWS;
  const uint key_tiles = CAUSAL ? qt + 1u : (block_len + ROWS - 1u) / ROWS;
  for (uint t = tid; t < ROWS; t += WG_SIZE) {
    row_max[t] = -3.402823466e38;
    row_sum[t] = 0.0;
    row_alpha[t] = 1.0;  // rows past q_rows keep it (their zero accumulators are never stored)
  }
  afloat acc[ROUNDS][4][4];  // the output rounds (block_attention_tiles.glsl)
  [[unroll]] for (uint i = 0; i < ROUNDS; ++i)
    [[unroll]] for (uint r = 0; r < 4; ++r)
      [[unroll]] for (uint c = 0; c < 4; ++c) acc[i][r][c] = 0.0;

  for (uint kt = 0; kt < key_tiles; ++kt) {
    k_rows = min(ROWS, block_len - kt * ROWS);
    k_row0 = bh * p.n + b0 + kt * ROWS;
    const bool diagonal = CAUSAL && kt == qt;  // the only pair the mask cuts

    // 1. Logits, 4 x 4 blocks of (t, s); every entry, zero past the tiles' rows (score_block's
    //    barriers order the previous tile's reads of the scores and the running sums' set-up).
    for (uint round = 0; round < score_rounds(); ++round) {
      uint t0, s0, step;
      afloat s_acc[4][4];
      if (!score_block(round, kQ, kK, DK, diagonal, t0, s0, step, s_acc)) continue;
      for (uint r = 0; r < 4; ++r)
        for (uint c = 0; c < 4; ++c) set_score(t0 + r, s0 + step * c, s_acc[r][c] * p.scale);
    }
    barrier();  // logits written -> read by the row owners

    // 2. Each row's online softmax; the columns past the tile's keys or the mask become 0.
    const uint part = tid % PARTS, rows_per_round = WG_SIZE / PARTS;
    for (uint first = 0; first < ROWS; first += rows_per_round) {  // rows in rounds (uniform)
      const uint t = first + tid / PARTS;
      const bool row_owner = t < q_rows && tid < rows_per_round * PARTS;
      const uint live = diagonal ? min(t + 1u, k_rows) : k_rows;
      afloat m = -3.402823466e38;
      for (uint s = part; row_owner && s < live; s += PARTS) m = max(m, score(t, s));
      row_part[tid] = m;
      barrier();  // partial maxima written -> every part of the row reads them
      m = row_owner ? row_max[t] : 0.0;
      for (uint i = 0; row_owner && i < PARTS; ++i) m = max(m, row_part[tid - part + i]);
      afloat l = 0.0;
      for (uint s = part; row_owner && s < len; s += PARTS) {
        const afloat w = s < live ? exp(score(t, s) - m) : 0.0;
        set_score(t, s, w);
        l += w;
      }
      barrier();  // maxima read -> partial sums overwrite them
      row_part[tid] = l;
      barrier();  // partial sums written -> read
      if (row_owner && part == 0) {
        l = 0.0;
        for (uint i = 0; i < PARTS; ++i) l += row_part[tid + i];
        const afloat alpha = exp(row_max[t] - m);
        row_sum[t] = row_sum[t] * alpha + l;
        row_max[t] = m;
        row_alpha[t] = alpha;
      }
      barrier();  // sums read and the running values written -> the next round or the products
    }

    // 3. O = alpha O + P V, every output round's blocks in registers (the walks' first barrier
    //    orders the probabilities before their reads).
    [[unroll]] for (uint i = 0; i < ROUNDS; ++i) {
      uint r0, c0;
      if (product_block(i, DV, r0, c0))
        for (uint r = 0; r < 4; ++r) {
          const afloat alpha = row_alpha[r0 + r];
          for (uint c = 0; c < 4; ++c) acc[i][r][c] *= alpha;
        }
    }
    products(false, diagonal, kV, DV, acc);
  }

  // O / l and the rows' log-sum-exp.
  [[unroll]] for (uint i = 0; i < ROUNDS; ++i) {
    uint r0, c0;
    if (!product_block(i, DV, r0, c0)) continue;
    const uint blocks_c = blocks_across(DV);
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c)
        if (r0 + r < q_rows && c0 + blocks_c * c < DV)
          store_result(kV, r0 + r, c0 + blocks_c * c, acc[i][r][c] / row_sum[r0 + r]);
  }
  for (uint t = tid; t < q_rows; t += WG_SIZE) lse[q_row0 + t] = row_max[t] + log(row_sum[t]);
}
