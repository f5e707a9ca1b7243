// Block attention forward for GPUs, one workgroup per (block, batch*head) and blocks up to 64: the
// block's attention as two products through shared-memory tiles, each invocation accumulating 4 x 4
// blocks in registers (the generic kernel keeps a row's Dv accumulators in a private array, which
// GPUs spill to memory, and reads its query row once per key):
//   1. logits S = scale * Q K^T over the block ([len, len], masked above the diagonal when CAUSAL),
//      TILE slices of the head dimension at a time, kept in shared memory;
//   2. each row's softmax in place (max, then sum of exponentials), a few invocations per row:
//      P and lse = max + log(sum);
//   3. O = P V, TILE rows of V at a time.
// q, k: [BH, N, Dk], v, o: [BH, N, Dv] sfloat with Dk, Dv <= 128; lse: [BH, N] f32.
#include "rill_common.glsl"
#include "block_attention_fwd_io.glsl"
#include "block_attention_tiles.glsl"  // the specialization constants and shared tiles

// The block's operands by index: 0 q, 1 k, 2 v.
const uint kQ = 0u, kK = 1u, kV = 2u;

uint qk_base, v_base;

// The softmax's invocations per row and their partial maxima or sums.
const uint PARTS = WG_SIZE / BLOCK >= 8u ? 8u : (WG_SIZE / BLOCK == 0u ? 1u : WG_SIZE / BLOCK);
shared afloat row_part[WG_SIZE];

afloat operand(uint which, uint row, uint x) {
  if (which == kQ) return afloat(q[qk_base + row * DK + x]);
  if (which == kK) return afloat(k[qk_base + row * DK + x]);
  return afloat(v[v_base + row * DV + x]);
}

void store_result(uint b, uint row, uint col, afloat value) { o[v_base + row * DV + col] = to_sfloat(value); }

void main() {
  const uint bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint b0 = gl_WorkGroupID.x * BLOCK;
  len = min(BLOCK, p.n - b0);
  qk_base = (bh * p.n + b0) * DK;
  v_base = (bh * p.n + b0) * DV;

  // 1. Logits, 4 x 4 blocks of (t, s); every entry of the blocks, zero past len.
  for (uint round = 0; round < score_rounds(); ++round) {
    uint r0, s0, step;
    afloat acc[4][4];
    if (!score_block(round, kQ, kK, DK, CAUSAL, r0, s0, step, acc)) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        const uint t = r0 + r, s = s0 + step * c;
        set_score(t, s, t < len && s < len ? acc[r][c] * p.scale : 0.0);
      }
  }
  barrier();  // logits written -> read by the row owners

  // 2. Each row's softmax in place; masked entries become 0. PARTS invocations share a row (a
  //    strided share of its columns each), their maxima and sums combined through shared memory in
  //    a fixed order: a row per invocation left most of the workgroup idle on a serial walk.
  const uint part = tid % PARTS, rows_per_round = WG_SIZE / PARTS;
  for (uint first = 0; first < len; first += rows_per_round) {  // rows in rounds (uniform)
    const uint t = first + tid / PARTS;
    const bool row_owner = t < len && tid < rows_per_round * PARTS;
    const uint last = CAUSAL ? t : len - 1;
    afloat m = -3.402823466e38;
    for (uint s = part; row_owner && s <= last; s += PARTS) m = max(m, score(t, s));
    row_part[tid] = m;
    barrier();  // partial maxima written -> every part of the row reads them
    m = -3.402823466e38;
    for (uint i = 0; row_owner && i < PARTS; ++i) m = max(m, row_part[tid - part + i]);
    afloat l = 0.0;
    for (uint s = part; row_owner && s <= last; s += PARTS) {
      const afloat w = exp(score(t, s) - m);
      set_score(t, s, w);
      l += w;
    }
    barrier();  // maxima read -> partial sums overwrite them
    row_part[tid] = l;
    barrier();  // partial sums written -> read
    l = 0.0;
    for (uint i = 0; row_owner && i < PARTS; ++i) l += row_part[tid - part + i];
    if (row_owner) {
      const afloat inv = 1.0 / l;
      for (uint s = part; s < len; s += PARTS) set_score(t, s, s <= last ? score(t, s) * inv : 0.0);
      if (part == 0) lse[bh * p.n + b0 + t] = m + log(l);
    }
    barrier();  // sums read -> the next round's maxima overwrite them
  }

  // 3. O = P V (its first barrier orders the probabilities before their reads).
  scores_product(false, CAUSAL, kV, DV);
}
