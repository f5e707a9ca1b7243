// Block attention backward for CPU drivers (the buffers are in block_attention_bwd_io.glsl). With P[t][s] = exp(scale q_t.k_s - lse_t) over the block (s <= t
// when CAUSAL), dP[t][s] = do_t . v_s and delta_t = do_t . o_t:
//   dS = scale P (dP - delta),  dq_t = sum_s dS[t][s] k_s,  dk_s = sum_t dS[t][s] q_t,
//   dv_s = sum_t P[t][s] do_t
// Built like the forward (block_attention_fwd_cpu.glsl): Dk and Dv are specialization constants and
// every loop over them is unrolled, a workgroup is one subgroup, each lane holds TQ rows of the
// block (r * SG + lane), and the rows the subgroup walks (the same for every lane) are loaded
// spread over the lanes (in loads of 1 or, with RILL_VECTOR_ROWS, 4 elements: vector_rows.glsl)
// and broadcast by shuffles. KIND picks what a dispatch computes:
// - key groups (their rows' dk and dv, walking the queries; each query's delta from its spread rows
//   of do and o, summed across the lanes by butterfly shuffles, which leave the same bits in every
//   lane) that also write every dS[t][s] they compute to the scores workspace (and the block's
//   first group each delta_t), then dq groups: dq = dS K for a group's rows from that workspace,
//   the lanes spread over dq's columns, 4 keys per step, the dS loaded spread over the lanes and
//   broadcast by shuffles. Each pair's products are computed once (scores, dP, dk, dv, dq: 5);
//   writing dS costs the key walk about 13 % on lavapipe, and the pair of dispatches ran 1.2-1.4x
//   as fast as the two below (N 4K, D 64, f32 and f16);
// - or query groups (their rows' delta and dq, walking the keys: the scores and dP again) and key
//   groups, independent of each other (7 products per pair).
// One kernel holding both row kinds' walks ran 1.5-4.5x slower on lavapipe than the two apart
// (LLVM's frame held both); KIND is a specialization constant, so each pipeline holds one.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint BLOCK = 64;
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint DK = 32;
layout(constant_id = 3) const uint DV = 32;
layout(constant_id = 4) const uint SG = 8;  // the device's subgroup size = the workgroup size
layout(constant_id = 5) const uint TQ = 2;  // rows per lane
// A block's row groups consecutive in x (else workgroup z is the group): a causal block's short
// and long walks interleave, and lavapipe's threads, which take a dispatch's workgroups in order,
// get even shares.
layout(constant_id = 6) const bool INTERLEAVE = true;
layout(constant_id = 7) const uint KIND = 0;  // kBlockBackward*: what the dispatch computes (above)
layout(local_size_x_id = 4) in;

#include "block_attention_bwd_io.glsl"
// dS of the dispatch's blocks, per block and head BP rows t of BP columns s. With
// RILL_SCORES_TEXELS (the `_tx_dq` kernel, which runs only the dq = dS K dispatches) read as
// 4-element texels: a group's four scores of a step are one texel (s0 - b0 and BP are multiples
// of 4), one gather for every lane where a storage-buffer load is four loops over the lanes.
#ifdef RILL_SCORES_TEXELS
layout(binding = 10) uniform samplerBuffer scores;
#else
layout(std430, binding = 10) buffer Scores { float scores[]; };
#endif

const uint TR = SG * TQ;                     // rows per group (a multiple of 4)
const uint GROUPS = (BLOCK + TR - 1) / TR;  // row groups per block
const uint BP = GROUPS * TR;                // a scores row: a column for every key group lane
// Loads per row and spread slots per lane.
const uint DKL = DK / ROW_VEC, DVL = DV / ROW_VEC, KS = (DKL + SG - 1) / SG, VS = (DVL + SG - 1) / SG;

uint lane, qk_base, v_base, lse_base, scores_base;  // bases in loads (scores: in elements)

// slots[c] = load c * SG + lane of a row of L loads, spread over the lanes (0 past the end; the
// load is clamped rather than skipped, which lavapipe runs faster).
#define SPREAD(slots, S, buf, base, row, L)                                         \
  [[unroll]] for (uint c_ = 0; c_ < S; ++c_) {                                      \
    const uint e_ = c_ * SG + lane;                                                 \
    const row_value x_ = ROW_READ(buf, (base) + (row) * (L) + min(e_, (L) - 1));   \
    slots[c_] = e_ < (L) ? x_ : row_value(0.0);                                     \
  }

// Query rows t_r: delta and dq, walking the keys s of the block (up to the group's last row when
// causal; later keys of a lane's own rows are masked).
void query_rows(uint b0, uint b1, uint row0) {
  uint tc[TQ];
  afloat qv[TQ][DK], dov[TQ][DV], acc[TQ][DK], lse_r[TQ], delta_r[TQ];
  [[unroll]] for (uint r = 0; r < TQ; ++r) {
    tc[r] = min(b0 + row0 + r * SG + lane, b1 - 1);  // rows past the block compute a copy of its last
    afloat ov[DV], d = 0.0;
    LOAD_ROW(dov[r], dout, v_base, tc[r], DV);
    LOAD_ROW(ov, o, v_base, tc[r], DV);
    [[unroll]] for (uint j = 0; j < DV; ++j) d += dov[r][j] * ov[j];
    delta_r[r] = d;
    lse_r[r] = lse[lse_base + tc[r]];
    LOAD_ROW(qv[r], q, qk_base, tc[r], DK);
    [[unroll]] for (uint i = 0; i < DK; ++i) acc[r][i] = 0.0;
  }
  const uint s_end = CAUSAL ? min(b0 + row0 + SG * TQ, b1) : b1;  // the same for every lane
  for (uint s = b0; s < s_end; ++s) {
    row_value ks[KS], vs[VS];
    afloat kb[DK];
    SPREAD(ks, KS, k, qk_base, s, DKL);
    SPREAD(vs, VS, v, v_base, s, DVL);
    afloat score[TQ], dp[TQ];
    [[unroll]] for (uint r = 0; r < TQ; ++r) score[r] = dp[r] = 0.0;
    [[unroll]] for (uint i = 0; i < DK; ++i) {
      kb[i] = SPREAD_ELEMENT(ks, i, SG);
      [[unroll]] for (uint r = 0; r < TQ; ++r) score[r] += qv[r][i] * kb[i];
    }
    [[unroll]] for (uint j = 0; j < DV; ++j) {
      const afloat vj = SPREAD_ELEMENT(vs, j, SG);
      [[unroll]] for (uint r = 0; r < TQ; ++r) dp[r] += dov[r][j] * vj;
    }
    [[unroll]] for (uint r = 0; r < TQ; ++r) {
      // A select, not a product: exp of a masked score may overflow.
      const afloat prob = CAUSAL && s > tc[r] ? 0.0 : exp(score[r] * p.scale - lse_r[r]);
      const afloat ds = prob * (dp[r] - delta_r[r]) * p.scale;
      [[unroll]] for (uint i = 0; i < DK; ++i) acc[r][i] += ds * kb[i];
    }
  }
  [[unroll]] for (uint r = 0; r < TQ; ++r) {
    const uint t = b0 + row0 + r * SG + lane;
    if (t >= b1) continue;
    delta[lse_base + t] = delta_r[r];
    STORE_ROW(dq, qk_base, t, DK, acc[r]);
  }
}

// Key rows s_r: dk and dv, walking the queries t of the block (from the group's first row when
// causal; earlier queries of a lane's own rows are masked).
void key_rows(uint b0, uint b1, uint row0) {
  uint sc[TQ];
  afloat kv[TQ][DK], vv[TQ][DV], acc_k[TQ][DK], acc_v[TQ][DV];
  [[unroll]] for (uint r = 0; r < TQ; ++r) {
    sc[r] = min(b0 + row0 + r * SG + lane, b1 - 1);
    LOAD_ROW(kv[r], k, qk_base, sc[r], DK);
    LOAD_ROW(vv[r], v, v_base, sc[r], DV);
    [[unroll]] for (uint i = 0; i < DK; ++i) acc_k[r][i] = 0.0;
    [[unroll]] for (uint j = 0; j < DV; ++j) acc_v[r][j] = 0.0;
  }
  for (uint t = CAUSAL ? b0 + row0 : b0; t < b1; ++t) {
    row_value qs[KS], dos[VS], os[VS];
    afloat qb[DK], dob[DV];
    SPREAD(qs, KS, q, qk_base, t, DKL);
    SPREAD(dos, VS, dout, v_base, t, DVL);
    SPREAD(os, VS, o, v_base, t, DVL);
    afloat d = 0.0;
    [[unroll]] for (uint c = 0; c < VS; ++c) d += dot(dos[c], os[c]);
    [[unroll]] for (uint m = 1; m < SG; m *= 2) d += subgroupShuffleXor(d, m);
    const afloat lse_t = lse[lse_base + t];
    afloat score[TQ], dp[TQ], ds_r[TQ];
    [[unroll]] for (uint r = 0; r < TQ; ++r) score[r] = dp[r] = 0.0;
    [[unroll]] for (uint i = 0; i < DK; ++i) {
      qb[i] = SPREAD_ELEMENT(qs, i, SG);
      [[unroll]] for (uint r = 0; r < TQ; ++r) score[r] += kv[r][i] * qb[i];
    }
    [[unroll]] for (uint j = 0; j < DV; ++j) {
      dob[j] = SPREAD_ELEMENT(dos, j, SG);
      [[unroll]] for (uint r = 0; r < TQ; ++r) dp[r] += vv[r][j] * dob[j];
    }
    [[unroll]] for (uint r = 0; r < TQ; ++r) {
      const afloat prob = CAUSAL && t < sc[r] ? 0.0 : exp(score[r] * p.scale - lse_t);
      const afloat ds = prob * (dp[r] - d) * p.scale;
      [[unroll]] for (uint i = 0; i < DK; ++i) acc_k[r][i] += ds * qb[i];
      [[unroll]] for (uint j = 0; j < DV; ++j) acc_v[r][j] += prob * dob[j];
      ds_r[r] = ds;
    }
    if (KIND == kBlockBackwardDkDvScores) {
      // Keys past the block's end hold zeros, which the dq groups' last step of 4 keys reads.
      [[unroll]] for (uint r = 0; r < TQ; ++r) {
        const uint s = row0 + r * SG + lane;  // in the block
#ifndef RILL_SCORES_TEXELS
        scores[scores_base + (t - b0) * BP + s] = b0 + s < b1 ? ds_r[r] : 0.0;
#endif
      }
    }
    if (KIND == kBlockBackwardDkDvScores && row0 == 0 && lane == 0) delta[lse_base + t] = d;
  }
  [[unroll]] for (uint r = 0; r < TQ; ++r) {
    const uint s = b0 + row0 + r * SG + lane;
    if (s >= b1) continue;
    STORE_ROW(dk, qk_base, s, DK, acc_k[r]);
    STORE_ROW(dv, v_base, s, DV, acc_v[r]);
  }
}

// dq of the group's rows t (row group = key group, so the causal walk of the keys never reads a
// score the key groups left unwritten): dq_t = sum_s dS[t][s] k_s, 4 keys per step. The lanes hold
// dq's columns spread as the other kinds spread rows (slot c: load c * SG + lane), and rows past
// the block compute a copy of its last.
void dq_from_scores(uint b0, uint b1, uint row0) {
  row_value acc[TR][KS];
  [[unroll]] for (uint i = 0; i < TR; ++i)
    [[unroll]] for (uint c = 0; c < KS; ++c) acc[i][c] = row_value(0.0);
  const uint s_end = CAUSAL ? min(b0 + row0 + TR, b1) : b1;  // keys past s_end meet only the mask
  for (uint s0 = b0; s0 < s_end; s0 += 4) {
    row_value ks[4][KS];
    [[unroll]] for (uint j = 0; j < 4; ++j) {
      // Keys past the block's end: zero rows, so that nothing of another row enters the sums.
      SPREAD(ks[j], KS, k, qk_base, min(s0 + j, b1 - 1), DKL);
      if (s0 + j >= b1) {
        [[unroll]] for (uint c = 0; c < KS; ++c) ks[j][c] = row_value(0.0);
      }
    }
    // The group's dS[t][s0 .. s0 + 3], row u * SG + lane in lane's slot u, broadcast by shuffles
    // (a load whose address is the same for every lane is still a loop over the lanes in a loop).
    vec4 dss[TQ];
    [[unroll]] for (uint u = 0; u < TQ; ++u) {
      const uint at = scores_base + min(row0 + u * SG + lane, b1 - b0 - 1) * BP + (s0 - b0);
#ifdef RILL_SCORES_TEXELS
      dss[u] = texelFetch(scores, int(at / 4));
#else
      dss[u] = vec4(scores[at], scores[at + 1], scores[at + 2], scores[at + 3]);
#endif
    }
    [[unroll]] for (uint i = 0; i < TR; ++i)
      [[unroll]] for (uint j = 0; j < 4; ++j) {
        const afloat ds = subgroupShuffle(dss[i / SG][j], i % SG);
        [[unroll]] for (uint c = 0; c < KS; ++c) acc[i][c] += ds * ks[j][c];
      }
  }
  [[unroll]] for (uint i = 0; i < TR; ++i) {
    const uint t = b0 + row0 + i;
    [[unroll]] for (uint c = 0; c < KS; ++c) {
      const uint e = c * SG + lane;
      if (t < b1 && e < DKL) dq[qk_base + t * DKL + e] = to_row_store(acc[i][c]);
    }
  }
}

void main() {
  const uint bh = gl_WorkGroupID.y;
  lane = gl_LocalInvocationID.x;
  const uint group = INTERLEAVE ? gl_WorkGroupID.x % GROUPS : gl_WorkGroupID.z;
  const uint block = (INTERLEAVE ? gl_WorkGroupID.x / GROUPS : gl_WorkGroupID.x) + p.first_block;
  const uint b0 = block * BLOCK;
  const uint b1 = min(b0 + BLOCK, p.n);
  const uint row0 = group * SG * TQ;  // this workgroup's first row in the block
  if (b0 + row0 >= b1) return;        // the whole workgroup: nothing of the block left
  qk_base = bh * p.n * DKL;
  v_base = bh * p.n * DVL;
  lse_base = bh * p.n;
  scores_base = ((block - p.first_block) * gl_NumWorkGroups.y + bh) * BP * BP;
  if (KIND == kBlockBackwardDq) query_rows(b0, b1, row0);
  else if (KIND == kBlockBackwardDqFromScores) dq_from_scores(b0, b1, row0);
  else key_rows(b0, b1, row0);
}
