// Causal linear attention for CPU drivers, as a scan with the state in registers:
//   S_t = lambda S_{t-1} + phi(k_t)^T v_t,   o_t = phi(q_t) S_t     (positions [first, first + count))
// the same function as the chunked kernel (la_chunked.glsl, MODE 0). On a GPU the chunked form
// wins through parallel matrix products; on a CPU driver it does the same O(Dk Dv) work per
// position as this scan plus the intra-chunk part, and its state lives in memory. Here a workgroup
// is one subgroup that owns SG * CJ columns of S (lane l: columns l, l + SG, ...) in registers for
// the whole dispatch; q and k rows are loaded spread over the lanes and broadcast by shuffles.
// DK and CJ are specialization constants so that every array index is a constant.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 0) const uint SG = 8;   // workgroup size = the device's subgroup size
layout(constant_id = 3) const uint DK = 64;
layout(constant_id = 4) const uint CJ = 4;   // state columns per lane
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer K { sfloat k[]; };
layout(std430, binding = 2) readonly buffer V { sfloat v[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) buffer State { float S_mem[]; };
layout(std430, binding = 5) writeonly buffer O { sfloat o[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaScanPush p; };

const uint KS = (DK + SG - 1) / SG;  // spread slots per lane for a q or k row

void main() {
  const uint bh = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
  const uint col0 = gl_WorkGroupID.y * SG * CJ + lane;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint qk_base = bh * p.n * DK, v_base = bh * p.n * p.dv, s_base = bh * DK * p.dv;
  uint cols[CJ];
  bool valid[CJ];
  [[unroll]] for (uint c = 0; c < CJ; ++c) {
    valid[c] = col0 + c * SG < p.dv;
    cols[c] = min(col0 + c * SG, p.dv - 1);
  }
  afloat S[DK][CJ];
  [[unroll]] for (uint i = 0; i < DK; ++i)
    [[unroll]] for (uint c = 0; c < CJ; ++c) S[i][c] = S_mem[s_base + i * p.dv + cols[c]];
  for (uint t = p.first; t < p.first + p.count; ++t) {
    afloat qs[KS], ks[KS], vv[CJ], out_t[CJ];
    [[unroll]] for (uint s = 0; s < KS; ++s) {
      const uint i = min(s * SG + lane, DK - 1);
      qs[s] = phi(afloat(q[qk_base + t * DK + i]));
      ks[s] = phi(afloat(k[qk_base + t * DK + i]));
    }
    [[unroll]] for (uint c = 0; c < CJ; ++c) {
      vv[c] = afloat(v[v_base + t * p.dv + cols[c]]);
      out_t[c] = 0.0;
    }
    [[unroll]] for (uint i = 0; i < DK; ++i) {
      const afloat qi = subgroupShuffle(qs[i / SG], i % SG), ki = subgroupShuffle(ks[i / SG], i % SG);
      [[unroll]] for (uint c = 0; c < CJ; ++c) {
        S[i][c] = HAS_DECAY ? lambda * S[i][c] + ki * vv[c] : S[i][c] + ki * vv[c];
        out_t[c] += qi * S[i][c];
      }
    }
    [[unroll]] for (uint c = 0; c < CJ; ++c)
      if (valid[c]) o[v_base + t * p.dv + cols[c]] = sfloat(out_t[c]);
  }
  [[unroll]] for (uint i = 0; i < DK; ++i)
    [[unroll]] for (uint c = 0; c < CJ; ++c)
      if (valid[c]) S_mem[s_base + i * p.dv + cols[c]] = S[i][c];
}
