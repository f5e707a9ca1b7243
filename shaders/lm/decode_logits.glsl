// Fused decoding, the output: x = resid + the last FFN's partial rows (rounded to storage),
// u = RMSNorm(x) * final gain, logits = u Head for this workgroup's columns. TRANSPOSED (dense
// weights only): the head is the tied embedding [vocab, width], read along its rows.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 3) const uint IN_MAX = 256;   // >= width
layout(constant_id = 4) const uint OUT_MAX = 256;  // >= columns
layout(constant_id = 5) const bool HAS_GAIN = true;
layout(constant_id = 6) const bool TRANSPOSED = false;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Resid { sfloat resid[]; };
layout(std430, binding = 1) readonly buffer PartsIn { float parts_in[]; };  // [parts_in, width]
layout(std430, binding = 2) readonly buffer Gain { sfloat gain[]; };
layout(std430, binding = 3) writeonly buffer Logits { sfloat logits[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { DecodeLogitsPush p; };

#define WEIGHT_BINDING 4
#include "decode_common.glsl"
#include "decode_residual.glsl"
RILL_DECODE_WEIGHT(0)
RILL_DECODE_DOT(0)

float input_gain(uint i) { return HAS_GAIN ? float(gain[i]) : 1.0; }

float column_dot(uint phase, uint j, uint r0, uint r1) {
  const uint c = gl_WorkGroupID.x * p.columns + j;
#if !defined(W_INT8) && !defined(W_INT4) && !defined(W_F16)
  if (TRANSPOSED) {
    float acc = 0.0;
    for (uint r = r0; r < r1; ++r) acc = fma(mv_in[r], weight0(0u, c, r, p.vocab, p.width), acc);
    return acc;
  }
#endif
  return dot0(0u, c, p.width, p.vocab, 0u, r0, r1);
}

void column_groups(uint phase, uint j, uint r0, uint r1, out vec4 res[LANE_SLOTS]) {
  if (TRANSPOSED) {  // the tied embedding's rows: one column at a time
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)
      [[unroll]] for (uint e = 0u; e < 4u; ++e) res[q][e] = column_dot(phase, j + 4u * q + e, r0, r1);
    return;
  }
  dotg_0(0u, gl_WorkGroupID.x * p.columns + j, p.width, p.vocab, 0u, r0, r1, res);
}

void main() {
  const uint lid = gl_LocalInvocationID.x, D = p.width;
  load_residual();
  normalize_input();
  const uint first = gl_WorkGroupID.x * p.columns, n = min(p.columns, p.vocab - first);
  matvec(0u, n, D, n);
  for (uint j = lid; j < n; j += WG_SIZE) logits[first + j] = to_sfloat(mv_out[j]);
}
