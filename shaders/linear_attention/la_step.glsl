// One decoding step of causal linear attention per (batch, head):
//   S <- lambda S + k^T v,   o = q S
// q, k: [Dk], v: [Dv] per head (sfloat), o: [Dv] (ofloat); S: [Dk, Dv] f32. Equal to the chunked form at that position.
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer K { sfloat k[]; };
layout(std430, binding = 2) readonly buffer V { sfloat v[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) buffer State { float S[]; };
layout(std430, binding = 5) writeonly buffer O { ofloat o[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaStepPush p; };

void main() {
  const uint bh = gl_WorkGroupID.x;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint s_base = bh * p.dk * p.dv;
  for (uint j = gl_LocalInvocationID.x; j < p.dv; j += WG_SIZE) {
    const afloat vj = afloat(v[bh * p.dv + j]);
    afloat out_j = 0.0;
    for (uint i = 0; i < p.dk; ++i) {
      const afloat s = lambda * S[s_base + i * p.dv + j] + phi(afloat(k[bh * p.dk + i])) * vj;
      S[s_base + i * p.dv + j] = s;
      out_j += phi(afloat(q[bh * p.dk + i])) * s;
    }
    o[bh * p.dv + j] = to_ofloat(out_j);
  }
}
