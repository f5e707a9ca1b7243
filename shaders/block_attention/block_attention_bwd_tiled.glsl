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
#include "block_attention_bwd_io.glsl"
#include "block_attention_tiles.glsl"  // the specialization constants and shared tiles
shared afloat delta_row[BLOCK];

// The block's operands by index: 0 q, 1 k, 2 v, 3 do (rows of `width` elements).
const uint kQ = 0u, kK = 1u, kV = 2u, kDo = 3u;

uint qk_base, v_base, lse_base;

afloat operand(uint which, uint row, uint x) {
  if (which == kQ) return afloat(q[qk_base + row * DK + x]);
  if (which == kK) return afloat(k[qk_base + row * DK + x]);
  if (which == kV) return afloat(v[v_base + row * DV + x]);
  return afloat(dout[v_base + row * DV + x]);
}

bool in_mask(uint t, uint s) { return t < len && s < len && (!CAUSAL || s <= t); }

void store_result(uint b, uint row, uint col, afloat value) {
  if (b == kDo) dv[v_base + row * DV + col] = to_sfloat(value);
  else if (b == kK) dq[qk_base + row * DK + col] = to_sfloat(value);
  else dk[qk_base + row * DK + col] = to_sfloat(value);
}

void main() {
  const uint bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint b0 = gl_WorkGroupID.x * BLOCK;
  len = min(BLOCK, p.n - b0);
  qk_base = (bh * p.n + b0) * DK;
  v_base = (bh * p.n + b0) * DV;
  lse_base = bh * p.n + b0;

  // 1. P, 4 x 4 blocks of (t, s); 3. dS in place. One round each for blocks up to 64 at WG 256.
  for (uint round = 0; round < score_rounds(); ++round) {
    uint t0, s0, step;
    afloat acc[4][4];
    if (!score_block(round, kQ, kK, DK, CAUSAL, t0, s0, step, acc)) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {  // every entry of the block, zero outside the mask and past len
        const uint t = t0 + r, s = s0 + step * c;
        set_score(t, s, in_mask(t, s) ? exp(acc[r][c] * p.scale - lse[lse_base + min(t, len - 1u)]) : 0.0);
      }
  }

  // 2. dV = P^T dO (its first barrier orders the scores above before their reads).
  scores_product(true, CAUSAL, kDo, DV);

  // 3. delta_t = do_t . o_t, then dS = scale P (dP - delta) with dP = dO V^T.
  for (uint t = tid; t < len; t += WG_SIZE) {
    afloat d = 0.0;
    for (uint j = 0; j < DV; ++j) d += operand(kDo, t, j) * afloat(o[v_base + t * DV + j]);
    delta_row[t] = d;
    delta[lse_base + t] = d;
  }
  for (uint round = 0; round < score_rounds(); ++round) {
    uint t0, s0, step;
    afloat acc[4][4];
    if (!score_block(round, kDo, kV, DV, CAUSAL, t0, s0, step, acc)) continue;  // its barriers order delta_row and dV's reads
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        const uint t = t0 + r, s = s0 + step * c;
        if (t < len && s < len) set_score(t, s, score(t, s) * (acc[r][c] - delta_row[t]) * p.scale);
      }
  }

  // 4. dQ = dS K;  5. dK = dS^T Q.
  scores_product(false, CAUSAL, kK, DK);
  scores_product(true, CAUSAL, kQ, DK);
}
