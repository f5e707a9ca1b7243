// Chunked linear attention over chunks [first_chunk, first_chunk + chunk_count) of one (batch, head)
// per workgroup; the state S carries everything before, so long sequences are split into
// dispatches of bounded length. With lambda the head's decay, t, s positions in chunk c starting at
// t0, and len its length:
//   MODE 0 (causal):  o_t = lambda^(t-t0+1) q_t S + sum_{t0<=s<=t} lambda^(t-s) (q_t . k_s) v_s
//                     S  <- lambda^len S + sum_s lambda^(t0+len-1-s) k_s^T v_s
//   MODE 1 (state):   only the update of S (the first pass of non-causal attention)
//   MODE 2 (apply):   o_t = q_t S for every t (the second pass of non-causal attention)
// Each invocation owns whole columns j of S and o, so S needs no synchronisation; the chunk's
// causal scores are shared through shared memory.
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 3) const uint CHUNK = 64;
layout(constant_id = 4) const uint MODE = 0;
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer K { sfloat k[]; };
layout(std430, binding = 2) readonly buffer V { sfloat v[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) buffer State { float S[]; };
layout(std430, binding = 5) writeonly buffer O { ofloat o[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaChunkPush p; };

shared afloat scores[CHUNK * CHUNK];

void main() {
  const uint bh = gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint qk_base = bh * p.n * p.dk, v_base = bh * p.n * p.dv, s_base = bh * p.dk * p.dv;
  for (uint c = p.first_chunk; c < p.first_chunk + p.chunk_count; ++c) {
    const uint t0 = c * CHUNK;
    if (t0 >= p.n) break;  // uniform across the workgroup
    const uint len = min(CHUNK, p.n - t0);
    if (MODE == kLaForwardCausal) {
      for (uint e = tid; e < len * len; e += WG_SIZE) {
        const uint t = e / len, s = e % len;
        afloat dot = 0.0;
        if (s <= t) {
          for (uint i = 0; i < p.dk; ++i)
            dot += phi(afloat(q[qk_base + (t0 + t) * p.dk + i])) * phi(afloat(k[qk_base + (t0 + s) * p.dk + i]));
          if (HAS_DECAY) dot *= decay_pow(lambda, afloat(t - s));
        }
        scores[t * CHUNK + s] = dot;
      }
      barrier();  // scores written -> read by every column owner
    }
    for (uint j = tid; j < p.dv; j += WG_SIZE) {
      if (MODE != kLaForwardState) {
        for (uint t = 0; t < len; ++t) {
          afloat inter = 0.0;
          for (uint i = 0; i < p.dk; ++i) inter += phi(afloat(q[qk_base + (t0 + t) * p.dk + i])) * S[s_base + i * p.dv + j];
          afloat val = inter;
          if (MODE == kLaForwardCausal) {
            if (HAS_DECAY) val *= decay_pow(lambda, afloat(t + 1));
            for (uint s = 0; s <= t; ++s) val += scores[t * CHUNK + s] * afloat(v[v_base + (t0 + s) * p.dv + j]);
          }
          o[v_base + (t0 + t) * p.dv + j] = to_ofloat(val);
        }
      }
      if (MODE != kLaForwardApply) {
        const afloat carry = HAS_DECAY ? decay_pow(lambda, afloat(len)) : 1.0;
        for (uint i = 0; i < p.dk; ++i) {
          afloat acc = carry * S[s_base + i * p.dv + j];
          for (uint s = 0; s < len; ++s) {
            afloat w = afloat(v[v_base + (t0 + s) * p.dv + j]) * phi(afloat(k[qk_base + (t0 + s) * p.dk + i]));
            if (HAS_DECAY) w *= decay_pow(lambda, afloat(len - 1 - s));
            acc += w;
          }
          S[s_base + i * p.dv + j] = acc;
        }
      }
    }
    if (MODE == kLaForwardCausal) barrier();  // scores read -> overwritten by the next chunk
  }
}
