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
// Here a workgroup is one subgroup that owns SG * CJ columns of S in registers for the whole
// dispatch; a and b rows are loaded spread over the lanes and broadcast by shuffles. DK (the width
// of a and b) and CJ are specialization constants so that every array index is a constant; p.dv
// is the width of c and out. On lavapipe every per-lane load is a loop over the lanes, so with
// RILL_VECTOR_ROWS (Dk and Dv multiples of 4, CJ = 4) a load takes 4 adjacent elements: lane l owns
// columns 4l .. 4l + 3 of its block and reads them, and its vectors of the a and b rows, one load
// each. Without it lane l owns columns l, l + SG, ... and loads single elements.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 0) const uint SG = 8;   // workgroup size = the device's subgroup size
layout(constant_id = 3) const uint DK = 64;
layout(constant_id = 4) const uint CJ = 4;   // state columns per lane (4 with RILL_VECTOR_ROWS)
layout(constant_id = 5) const uint MODE = 0;
layout(constant_id = 6) const bool PHI_A = true;
layout(constant_id = 7) const bool PHI_B = true;
layout(constant_id = 8) const bool PHI_C = false;
layout(constant_id = 9) const bool REVERSE = false;
layout(constant_id = 10) const bool GRAD_SCALE = false;
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

#include "vector_rows.glsl"
#ifdef RILL_VECTOR_ROWS
row_value phi_each(row_value v) { return vec4(phi(v.x), phi(v.y), phi(v.z), phi(v.w)); }
row_value phi_grad_each(row_value v) { return vec4(phi_grad(v.x), phi_grad(v.y), phi_grad(v.z), phi_grad(v.w)); }
#else
row_value phi_each(row_value v) { return phi(v); }
row_value phi_grad_each(row_value v) { return phi_grad(v); }
#endif

layout(std430, binding = 0) readonly buffer A { row_store a[]; };
layout(std430, binding = 1) readonly buffer B { row_store b[]; };
layout(std430, binding = 2) readonly buffer C { row_store c[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) buffer State { float S_mem[]; };
layout(std430, binding = 5) writeonly buffer Out { out_row_store out_[]; };
layout(std430, binding = 6) readonly buffer X { row_store x[]; };  // GRAD_SCALE: phi' of x scales out
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaScanPush p; };

const uint KS = (DK + SG * ROW_VEC - 1) / (SG * ROW_VEC);  // loads per lane of an a or b row
const bool kUpdate = MODE != kLaForwardApply, kOutput = MODE != kLaForwardState;

row_value maybe_phi(bool use, row_value v) { return use ? phi_each(v) : v; }

void main() {
  const uint bh = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
  const uint block0 = gl_WorkGroupID.y * SG * CJ;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  // In loads: a and b rows, c and out rows, and this lane's columns.
  const uint ab_base = bh * p.n * (DK / ROW_VEC), row_loads = DK / ROW_VEC, c_base = bh * p.n * p.dv;
  const uint s_base = bh * DK * p.dv;
  uint cols[CJ];
  bool valid[CJ];
  [[unroll]] for (uint j = 0; j < CJ; ++j) {
    const uint col = ROW_VEC == 4u ? block0 + lane * CJ + j : block0 + lane + j * SG;
    valid[j] = col < p.dv;
    cols[j] = min(col, p.dv - 1);
  }
  afloat S[DK][CJ];
  [[unroll]] for (uint i = 0; i < DK; ++i)
    [[unroll]] for (uint j = 0; j < CJ; ++j) S[i][j] = S_mem[s_base + i * p.dv + cols[j]];
  for (uint t = p.first; t < p.first + p.count; ++t) {
    const uint row = REVERSE ? p.n - 1u - t : t;
    row_value as[KS], bs[KS];
    afloat cv[CJ], out_t[CJ];
    [[unroll]] for (uint s = 0; s < KS; ++s) {
      // Lanes past the row's end load a clamped copy that no one reads.
      const uint at = ab_base + row * row_loads + min(s * SG + lane, row_loads - 1);
      if (kOutput) as[s] = maybe_phi(PHI_A, row_value(a[at]));
      if (kUpdate) bs[s] = maybe_phi(PHI_B, row_value(b[at]));
    }
    const uint c_row = c_base + row * p.dv;  // in elements
#ifdef RILL_VECTOR_ROWS
    if (kUpdate) {
      const row_value cvec = maybe_phi(PHI_C, row_value(c[(c_row + cols[0]) / 4u]));
      [[unroll]] for (uint j = 0; j < CJ; ++j) cv[j] = cvec[j];
    }
#else
    if (kUpdate)
      [[unroll]] for (uint j = 0; j < CJ; ++j) cv[j] = maybe_phi(PHI_C, afloat(c[c_row + cols[j]]));
#endif
    [[unroll]] for (uint j = 0; j < CJ; ++j) out_t[j] = 0.0;
    [[unroll]] for (uint i = 0; i < DK; ++i) {
      if (kUpdate) {
        const afloat bi = SPREAD_ELEMENT(bs, i, SG);
        [[unroll]] for (uint j = 0; j < CJ; ++j) S[i][j] = HAS_DECAY ? lambda * S[i][j] + bi * cv[j] : S[i][j] + bi * cv[j];
      }
      if (kOutput) {
        const afloat ai = SPREAD_ELEMENT(as, i, SG);
        [[unroll]] for (uint j = 0; j < CJ; ++j) out_t[j] += ai * S[i][j];
      }
    }
    if (kOutput) {
#ifdef RILL_VECTOR_ROWS
      if (valid[0]) {  // the lane's four columns are all in the row or all past it
        const uint v = (c_row + cols[0]) / 4u;
        const row_value o = vec4(out_t[0], out_t[1], out_t[2], out_t[3]);
        out_[v] = to_out_row_store(GRAD_SCALE ? o * phi_grad_each(row_value(x[v])) : o);
      }
#else
      [[unroll]] for (uint j = 0; j < CJ; ++j) {
        if (!valid[j]) continue;
        const uint at = c_row + cols[j];
        out_[at] = to_ofloat(GRAD_SCALE ? out_t[j] * phi_grad(afloat(x[at])) : out_t[j]);
      }
#endif
    }
  }
  if (kUpdate) {
    [[unroll]] for (uint i = 0; i < DK; ++i)
      [[unroll]] for (uint j = 0; j < CJ; ++j)
        if (valid[j]) S_mem[s_base + i * p.dv + cols[j]] = S[i][j];
  }
}
