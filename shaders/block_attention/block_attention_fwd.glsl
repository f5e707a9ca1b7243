// Block attention (TransNormer's DiagAttention), forward: softmax attention inside non-overlapping
// blocks of BLOCK positions. For query t in block [b0, b1) and scale = 1 / sqrt(Dk):
//   o_t = sum_s softmax_s(scale * q_t . k_s) v_s   over s in [b0, b1) (s <= t when CAUSAL)
// computed with an online softmax (running max m, running sum l), so logits of any size neither
// overflow nor lose precision; lse_t = m + log(l) is saved for the backward pass.
// One workgroup per (block, batch*head), one invocation per query row.
// q, k: [BH, N, Dk], v, o: [BH, N, Dv] sfloat; lse: [BH, N] f32; Dv <= MAX_DV.
#include "rill_common.glsl"

layout(constant_id = 0) const uint BLOCK = 64;
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint MAX_DV = 128;
layout(local_size_x_id = 0) in;

#include "block_attention_fwd_io.glsl"

void main() {
  const uint bh = gl_WorkGroupID.y;
  const uint b0 = gl_WorkGroupID.x * BLOCK;
  const uint t = b0 + gl_LocalInvocationID.x;
  if (t >= p.n) return;  // no barriers below
  const uint b1 = min(b0 + BLOCK, p.n);
  const uint last = CAUSAL ? t : b1 - 1;
  const uint qk_base = bh * p.n * p.dk, v_base = bh * p.n * p.dv;
  afloat acc[MAX_DV];
  for (uint j = 0; j < p.dv; ++j) acc[j] = 0.0;
  afloat m = uintBitsToFloat(0xff800000u), l = 0.0;  // -inf
  for (uint s = b0; s <= last; ++s) {
    afloat score = 0.0;
    for (uint i = 0; i < p.dk; ++i) score += afloat(q[qk_base + t * p.dk + i]) * afloat(k[qk_base + s * p.dk + i]);
    score *= p.scale;
    const afloat m_new = max(m, score);
    const afloat rescale = exp(m - m_new);  // exp(-inf) = 0 on the first step
    const afloat w = exp(score - m_new);
    l = l * rescale + w;
    for (uint j = 0; j < p.dv; ++j) acc[j] = acc[j] * rescale + w * afloat(v[v_base + s * p.dv + j]);
    m = m_new;
  }
  for (uint j = 0; j < p.dv; ++j) o[v_base + t * p.dv + j] = to_sfloat(acc[j] / l);
  lse[bh * p.n + t] = m + log(l);
}
