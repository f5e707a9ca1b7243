// Causal linear attention in its quadratic form, one invocation per output element (bh, t, j):
//   o_t[j] = sum_{s<=t} lambda^(t-s) (phi(q_t) . phi(k_s)) v_s[j]
// The O(N^2) baseline for tests and benchmarks. Keys [s_begin, s_end) per dispatch, added to o
// when `accumulate` (long sequences are split so that no invocation loops too long).
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer K { sfloat k[]; };
layout(std430, binding = 2) readonly buffer V { sfloat v[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) buffer O { ofloat o[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaNaivePush p; };

void main() {
  const uint idx = rill_global_index();
  if (idx >= p.total) return;
  const uint j = idx % p.dv, t = (idx / p.dv) % p.n, bh = idx / (p.dv * p.n);
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint qk_base = bh * p.n * p.dk, v_base = bh * p.n * p.dv;
  if (t < p.s_begin) return;  // no key of this range is visible to t
  afloat acc = p.accumulate != 0 ? afloat(o[v_base + t * p.dv + j]) : 0.0;
  for (uint s = p.s_begin; s <= t && s < p.s_end; ++s) {
    afloat dot = 0.0;
    for (uint i = 0; i < p.dk; ++i) dot += phi(afloat(q[qk_base + t * p.dk + i])) * phi(afloat(k[qk_base + s * p.dk + i]));
    if (HAS_DECAY) dot *= decay_pow(lambda, afloat(t - s));
    acc += dot * afloat(v[v_base + s * p.dv + j]);
  }
  o[v_base + t * p.dv + j] = to_ofloat(acc);
}
