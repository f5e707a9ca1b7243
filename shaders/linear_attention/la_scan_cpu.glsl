// Linear attention for CPU drivers, as a scan with the state in registers. It computes the
// generalised form of la_par_common.glsl one position after another:
//   S_t = lambda S_{t-1} + g(b_t)^T h(c_t),   out_t = f(a_t) S_t   (times phi'(x_t) with GRAD_SCALE)
// over (mapped) positions [first, first + count); f, g, h are phi or the identity (PHI_A, PHI_B,
// PHI_C) and REVERSE runs backward in time (position t is row n - 1 - t). The forward is a = q,
// b = k, c = v with phi on a and b; the backward's gradients are the same form with the operands
// exchanged (linear_attention.cpp). MODE (contract/attention.glsl): kLaForwardCausal as above;
// kLaForwardState only accumulates S (the non-causal form's first pass); kLaForwardApply writes
// out_t = f(a_t) S with S fixed (its second pass).
// On a GPU the chunked form wins through parallel matrix products; on a CPU driver it does the same
// O(DK Dv) work per position as this scan plus the intra-chunk part, and its state lives in memory.
// Here a workgroup is one subgroup that owns SG * CJ columns of S (lane l: columns l, l + SG, ...)
// in registers for the whole dispatch; a and b rows are loaded spread over the lanes and broadcast
// by shuffles. DK (the width of a and b) and CJ are specialization constants so that every array
// index is a constant; p.dv is the width of c and out.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 0) const uint SG = 8;   // workgroup size = the device's subgroup size
layout(constant_id = 3) const uint DK = 64;
layout(constant_id = 4) const uint CJ = 4;   // state columns per lane
layout(constant_id = 5) const uint MODE = 0;
layout(constant_id = 6) const bool PHI_A = true;
layout(constant_id = 7) const bool PHI_B = true;
layout(constant_id = 8) const bool PHI_C = false;
layout(constant_id = 9) const bool REVERSE = false;
layout(constant_id = 10) const bool GRAD_SCALE = false;
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) readonly buffer C { sfloat c[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) buffer State { float S_mem[]; };
layout(std430, binding = 5) writeonly buffer Out { sfloat out_[]; };
layout(std430, binding = 6) readonly buffer X { sfloat x[]; };  // GRAD_SCALE: phi' of x scales out
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaScanPush p; };

const uint KS = (DK + SG - 1) / SG;  // spread slots per lane for an a or b row
const bool kUpdate = MODE != kLaForwardApply, kOutput = MODE != kLaForwardState;

afloat maybe_phi(bool use, afloat v) { return use ? phi(v) : v; }

void main() {
  const uint bh = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
  const uint col0 = gl_WorkGroupID.y * SG * CJ + lane;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint ab_base = bh * p.n * DK, c_base = bh * p.n * p.dv, s_base = bh * DK * p.dv;
  uint cols[CJ];
  bool valid[CJ];
  [[unroll]] for (uint j = 0; j < CJ; ++j) {
    valid[j] = col0 + j * SG < p.dv;
    cols[j] = min(col0 + j * SG, p.dv - 1);
  }
  afloat S[DK][CJ];
  [[unroll]] for (uint i = 0; i < DK; ++i)
    [[unroll]] for (uint j = 0; j < CJ; ++j) S[i][j] = S_mem[s_base + i * p.dv + cols[j]];
  for (uint t = p.first; t < p.first + p.count; ++t) {
    const uint row = REVERSE ? p.n - 1u - t : t;
    afloat as[KS], bs[KS], cv[CJ], out_t[CJ];
    [[unroll]] for (uint s = 0; s < KS; ++s) {
      const uint i = min(s * SG + lane, DK - 1);
      if (kOutput) as[s] = maybe_phi(PHI_A, afloat(a[ab_base + row * DK + i]));
      if (kUpdate) bs[s] = maybe_phi(PHI_B, afloat(b[ab_base + row * DK + i]));
    }
    [[unroll]] for (uint j = 0; j < CJ; ++j) {
      if (kUpdate) cv[j] = maybe_phi(PHI_C, afloat(c[c_base + row * p.dv + cols[j]]));
      out_t[j] = 0.0;
    }
    [[unroll]] for (uint i = 0; i < DK; ++i) {
      if (kUpdate) {
        const afloat bi = subgroupShuffle(bs[i / SG], i % SG);
        [[unroll]] for (uint j = 0; j < CJ; ++j) S[i][j] = HAS_DECAY ? lambda * S[i][j] + bi * cv[j] : S[i][j] + bi * cv[j];
      }
      if (kOutput) {
        const afloat ai = subgroupShuffle(as[i / SG], i % SG);
        [[unroll]] for (uint j = 0; j < CJ; ++j) out_t[j] += ai * S[i][j];
      }
    }
    if (kOutput) {
      [[unroll]] for (uint j = 0; j < CJ; ++j) {
        if (!valid[j]) continue;
        const uint at = c_base + row * p.dv + cols[j];
        out_[at] = sfloat(GRAD_SCALE ? out_t[j] * phi_grad(afloat(x[at])) : out_t[j]);
      }
    }
  }
  if (kUpdate) {
    [[unroll]] for (uint i = 0; i < DK; ++i)
      [[unroll]] for (uint j = 0; j < CJ; ++j)
        if (valid[j]) S_mem[s_base + i * p.dv + cols[j]] = S[i][j];
  }
}
