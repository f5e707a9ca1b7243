// Fused decoding, the second half of a layer, one workgroup per slice of the FFN's columns:
//   h = x + (sum over heads of the mixer's partial rows) / rms (OUT_NORM: the output norm's
//       1 / rms from the heads' sums of squares; else 1), rounded to storage; wg 0 writes it
//   g = RMSNorm(h) * ffn_gain;  hidden = (g Wu) * act(g Wg) for this slice's columns
//   parts_out[s] = hidden Wd[this slice's rows]: the next layer's mixer (or the logits) adds the
//   slices' rows to h.
#include "rill_common.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint ACT = 2;
layout(constant_id = 3) const uint IN_MAX = 256;   // >= width, >= slice
layout(constant_id = 4) const uint OUT_MAX = 256;  // >= width, >= 2 slice
layout(constant_id = 5) const bool HAS_GAIN = true;
layout(constant_id = 7) const bool OUT_NORM = false;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer XIn { sfloat x_in[]; };
layout(std430, binding = 1) readonly buffer PartsIn { float parts_in[]; };  // [heads, width + 1]
layout(std430, binding = 2) writeonly buffer ResidOut { sfloat resid_out[]; };
layout(std430, binding = 3) readonly buffer FfnGain { sfloat ffn_gain[]; };
layout(std430, binding = 4) writeonly buffer PartsOut { float parts_out[]; };  // [slices, width]
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { DecodeFfnPush p; };

#define WEIGHT_BINDING 5
#include "decode_common.glsl"
RILL_DECODE_WEIGHT(0)  // Wu
RILL_DECODE_WEIGHT(1)  // Wg
RILL_DECODE_WEIGHT(2)  // Wd
RILL_DECODE_DOT(0)
RILL_DECODE_DOT(1)
RILL_DECODE_DOT(2)

uint slice_first, slice_cols;  // this workgroup's FFN columns

float input_gain(uint i) { return HAS_GAIN ? float(ffn_gain[i]) : 1.0; }

float column_dot(uint phase, uint j, uint r0, uint r1) {
  if (phase == 1u) return dot2(0u, j, p.ffn, p.width, slice_first, r0, r1);  // Wd: this slice's rows
  if (j < slice_cols) return dot0(0u, slice_first + j, p.width, p.ffn, 0u, r0, r1);
  return dot1(0u, slice_first + j - slice_cols, p.width, p.ffn, 0u, r0, r1);
}

void column_groups(uint phase, uint j, uint r0, uint r1, out vec4 res[LANE_SLOTS]) {
  if (phase == 1u) dotg_2(0u, j, p.ffn, p.width, slice_first, r0, r1, res);
  else if (j < slice_cols) dotg_0(0u, slice_first + j, p.width, p.ffn, 0u, r0, r1, res);
  else dotg_1(0u, slice_first + j - slice_cols, p.width, p.ffn, 0u, r0, r1, res);
}

void main() {
  const uint s = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x, D = p.width;
  slice_first = s * p.slice;
  slice_cols = min(p.slice, p.ffn - slice_first);
  float rstd = 1.0;
  if (OUT_NORM) {
    float ss = 0.0;
    for (uint h = 0u; h < p.heads; ++h) ss += parts_in[h * (D + 1u) + D];
    rstd = rms_inverse(ss, float(D), p.eps);
  }
  for (uint i = lid; i < D; i += WG_SIZE) {
    float a = 0.0;
    for (uint h = 0u; h < p.heads; ++h) a += parts_in[h * (D + 1u) + i];
    const float hv = rill_storage_round(float(x_in[i]) + a * rstd);
    mv_in[i] = hv;
    if (s == 0u) resid_out[i] = to_sfloat(hv);
  }
  normalize_input();
  matvec(0u, 2u * slice_cols, D, slice_cols);  // Wu's columns, then Wg's
  for (uint j = lid; j < slice_cols; j += WG_SIZE)
    mv_in[j] = rill_storage_round(rill_storage_round(mv_out[j]) * act(ACT, rill_storage_round(mv_out[slice_cols + j])));
  barrier();  // hidden -> the down projection
  matvec(1u, D, slice_cols, D);
  for (uint c = lid; c < D; c += WG_SIZE) parts_out[s * D + c] = mv_out[c];
}
