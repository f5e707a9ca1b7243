// Block attention forward for CPU drivers (same contract as block_attention_fwd.glsl; the op picks
// it when the device prefers cpu kernels).
// On lavapipe a load whose address differs per lane is a loop over the lanes, while moving values
// between lanes is a register shuffle; arrays stay in registers only when every index is a
// compile-time constant. So: Dk and Dv are specialization constants and every loop over them is
// unrolled; each invocation holds TQ query rows (t, t + SG, ...), a workgroup is one subgroup of
// SG * TQ consecutive rows (GROUPS workgroups per block, so no subgroup waits on another); a key
// or value row s (the same for every lane) is loaded spread over the lanes (lane l takes loads
// l, l + SG, ... of one element, or of 4 with RILL_VECTOR_ROWS, as texels with RILL_TEXEL_ROWS:
// vector_rows.glsl) and broadcast by subgroupShuffle, KC keys per step. Every lane of a subgroup
// walks the same keys (up to the subgroup's last row when causal; later keys of its own are
// masked), so shuffles never read an inactive lane.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint BLOCK = 64;
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint DK = 32;
layout(constant_id = 3) const uint DV = 32;
layout(constant_id = 4) const uint SG = 8;  // the device's subgroup size = the workgroup size
layout(constant_id = 5) const uint TQ = 4;  // query rows per lane (each loaded key serves SG * TQ rows)
layout(local_size_x_id = 4) in;

#include "block_attention_fwd_io.glsl"

// INTERLEAVE: a block's workgroups are consecutive in x (else workgroup z is the row group), so
// a causal block's short and long row groups interleave and lavapipe's threads, which split a
// dispatch's workgroups in order, get even shares (causal block 64 ran as slow as non-causal).
layout(constant_id = 6) const bool INTERLEAVE = true;
layout(constant_id = 7) const uint KC = 2;  // keys per step (the plan's keys_per_step)
const uint GROUPS = (BLOCK + SG * TQ - 1) / (SG * TQ);  // workgroups per block
// Loads per row and spread slots per lane.
const uint DKL = DK / ROW_VEC, DVL = DV / ROW_VEC, KS = (DKL + SG - 1) / SG, VS = (DVL + SG - 1) / SG;
#define NEG_INF uintBitsToFloat(0xff800000u)

void main() {
  const uint bh = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
  const uint b0 = (INTERLEAVE ? gl_WorkGroupID.x / GROUPS : gl_WorkGroupID.x) * BLOCK;
  const uint b1 = min(b0 + BLOCK, p.n);
  const uint group = INTERLEAVE ? gl_WorkGroupID.x % GROUPS : gl_WorkGroupID.z;
  const uint row0 = group * SG * TQ;  // this workgroup's first row in the block
  if (b0 + row0 >= b1) return;                   // the whole workgroup: nothing of the block left
  const uint qk_base = bh * p.n * DKL, v_base = bh * p.n * DVL;  // in loads
  // Lane rows t_r = b0 + row0 + r * SG + lane; rows past the block's end compute a copy of its last.
  uint tc[TQ];
  afloat qv[TQ][DK], acc[TQ][DV], m[TQ], l[TQ];
  [[unroll]] for (uint r = 0; r < TQ; ++r) {
    tc[r] = min(b0 + row0 + r * SG + lane, b1 - 1);
    LOAD_ROW(qv[r], q, qk_base, tc[r], DK);
    [[unroll]] for (uint i = 0; i < DK; ++i) qv[r][i] *= p.scale;
    [[unroll]] for (uint j = 0; j < DV; ++j) acc[r][j] = 0.0;
    m[r] = NEG_INF;
    l[r] = 0.0;
  }
  const uint s_end = CAUSAL ? min(b0 + row0 + SG * TQ, b1) : b1;  // the same for every lane
  // KC keys per step: one max, one rescale of the accumulators and one read-modify-write of each
  // per step instead of per key (the accumulators live in memory on lavapipe: TQ x DV per lane).
  for (uint s0 = b0; s0 < s_end; s0 += KC) {
    row_value ks[KC][KS], vs[KC][VS];
    [[unroll]] for (uint c = 0; c < KC; ++c) {
      const uint s = min(s0 + c, s_end - 1);  // keys past the end load a copy and weigh nothing
      [[unroll]] for (uint e = 0; e < KS; ++e) {
        const uint i = e * SG + lane;
        ks[c][e] = i < DKL ? ROW_READ(k, qk_base + s * DKL + min(i, DKL - 1)) : row_value(0.0);
      }
      [[unroll]] for (uint e = 0; e < VS; ++e) {
        const uint j = e * SG + lane;
        vs[c][e] = j < DVL ? ROW_READ(v, v_base + s * DVL + min(j, DVL - 1)) : row_value(0.0);
      }
    }
    afloat score[TQ][KC];
    [[unroll]] for (uint r = 0; r < TQ; ++r)
      [[unroll]] for (uint c = 0; c < KC; ++c) score[r][c] = 0.0;
    [[unroll]] for (uint i = 0; i < DK; ++i) {
      [[unroll]] for (uint c = 0; c < KC; ++c) {
        const afloat ki = SPREAD_ELEMENT(ks[c], i, SG);
        [[unroll]] for (uint r = 0; r < TQ; ++r) score[r][c] = fma(qv[r][i], ki, score[r][c]);
      }
    }
    afloat rescale[TQ];
    [[unroll]] for (uint r = 0; r < TQ; ++r) {
      // Keys after the row itself (causal) or past the end weigh nothing; the first step holds
      // key b0 <= t, so m is finite from then on.
      afloat m_new = m[r];
      [[unroll]] for (uint c = 0; c < KC; ++c) {
        if (s0 + c >= s_end || (CAUSAL && s0 + c > tc[r])) score[r][c] = NEG_INF;
        m_new = max(m_new, score[r][c]);
      }
      rescale[r] = exp(m[r] - m_new);
      l[r] *= rescale[r];
      [[unroll]] for (uint c = 0; c < KC; ++c) {
        score[r][c] = exp(score[r][c] - m_new);  // now the key's weight
        l[r] += score[r][c];
      }
      m[r] = m_new;
    }
    [[unroll]] for (uint j = 0; j < DV; ++j) {
      afloat vj[KC];
      [[unroll]] for (uint c = 0; c < KC; ++c) vj[c] = SPREAD_ELEMENT(vs[c], j, SG);
      [[unroll]] for (uint r = 0; r < TQ; ++r) {
        afloat a = acc[r][j] * rescale[r];
        [[unroll]] for (uint c = 0; c < KC; ++c) a = fma(score[r][c], vj[c], a);
        acc[r][j] = a;
      }
    }
  }
  [[unroll]] for (uint r = 0; r < TQ; ++r) {
    const uint t = b0 + row0 + r * SG + lane;
    if (t >= b1) continue;
    [[unroll]] for (uint u = 0; u < DVL; ++u) o[v_base + t * DVL + u] = to_row_store(ROW_AT(acc[r], u) / l[r]);
    lse[bh * p.n + t] = m[r] + log(l[r]);
  }
}
