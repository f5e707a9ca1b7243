// Block attention backward from the saved log-sum-exp. With P[t][s] = exp(scale q_t.k_s - lse_t) over
// the block (s <= t when CAUSAL), dP[t][s] = do_t . v_s and delta_t = do_t . o_t = sum_s P dP:
//   dS = P (dP - delta),  dq_t = scale sum_s dS[t][s] k_s,  dk_s = scale sum_t dS[t][s] q_t,
//   dv_s = sum_t P[t][s] do_t
// MODE 0: one invocation per query row t: delta_t (stored) and dq_t.
// MODE 1: one invocation per key row s: dk_s and dv_s (reads delta from MODE 0).
// The buffers are in block_attention_bwd_io.glsl.
#include "rill_common.glsl"

layout(constant_id = 0) const uint BLOCK = 64;
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint MAX_D = 128;
layout(constant_id = 3) const uint MODE = 0;
layout(local_size_x_id = 0) in;

#include "block_attention_bwd_io.glsl"

afloat score(uint qk, uint t, uint s) {
  afloat x = 0.0;
  for (uint i = 0; i < p.dk; ++i) x += afloat(q[qk + t * p.dk + i]) * afloat(k[qk + s * p.dk + i]);
  return x * p.scale;
}

afloat do_dot_v(uint vo, uint t, uint s) {
  afloat x = 0.0;
  for (uint j = 0; j < p.dv; ++j) x += afloat(dout[vo + t * p.dv + j]) * afloat(v[vo + s * p.dv + j]);
  return x;
}

void main() {
  const uint bh = gl_WorkGroupID.y;
  const uint b0 = gl_WorkGroupID.x * BLOCK;
  const uint row = b0 + gl_LocalInvocationID.x;
  if (row >= p.n) return;  // no barriers below
  const uint b1 = min(b0 + BLOCK, p.n);
  const uint qk = bh * p.n * p.dk, vo = bh * p.n * p.dv, rb = bh * p.n;  // row base of lse, delta
  afloat acc0[MAX_D], acc1[MAX_D];
  if (MODE == kBlockBackwardDq) {
    const uint t = row;
    afloat d = 0.0;
    for (uint j = 0; j < p.dv; ++j) d += afloat(dout[vo + t * p.dv + j]) * afloat(o[vo + t * p.dv + j]);
    delta[rb + t] = d;
    for (uint i = 0; i < p.dk; ++i) acc0[i] = 0.0;
    const uint last = CAUSAL ? t : b1 - 1;
    for (uint s = b0; s <= last; ++s) {
      const afloat prob = exp(score(qk, t, s) - lse[rb + t]);
      const afloat ds = prob * (do_dot_v(vo, t, s) - d) * p.scale;
      for (uint i = 0; i < p.dk; ++i) acc0[i] += ds * afloat(k[qk + s * p.dk + i]);
    }
    for (uint i = 0; i < p.dk; ++i) dq[qk + t * p.dk + i] = to_sfloat(acc0[i]);
  } else {
    const uint s = row;
    for (uint i = 0; i < p.dk; ++i) acc0[i] = 0.0;
    for (uint j = 0; j < p.dv; ++j) acc1[j] = 0.0;
    for (uint t = CAUSAL ? s : b0; t < b1; ++t) {
      const afloat prob = exp(score(qk, t, s) - lse[rb + t]);
      const afloat ds = prob * (do_dot_v(vo, t, s) - delta[rb + t]) * p.scale;
      for (uint i = 0; i < p.dk; ++i) acc0[i] += ds * afloat(q[qk + t * p.dk + i]);
      for (uint j = 0; j < p.dv; ++j) acc1[j] += prob * afloat(dout[vo + t * p.dv + j]);
    }
    for (uint i = 0; i < p.dk; ++i) dk[qk + s * p.dk + i] = to_sfloat(acc0[i]);
    for (uint j = 0; j < p.dv; ++j) dv[vo + s * p.dv + j] = to_sfloat(acc1[j]);
  }
}
