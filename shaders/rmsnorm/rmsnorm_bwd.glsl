// RMSNorm backward for the input, one workgroup per row. With gd = gain * dy (gain = 1 without it)
// and r = rstd[row], differentiating y = x * r * gain where r = (mean(x^2) + eps)^-1/2:
//   dx[c] = r * gd[c] - (r^3 / dim) * x[c] * sum_k(gd[k] * x[k])
// ACCUMULATE adds into dx instead of overwriting it (the backward of a residual add).
// x, dy, dx: [rows, dim] sfloat; gain: [dim] sfloat; rstd: [rows] f32. Loads of 1 element, or of 4
// with RILL_VECTOR_ROWS (the `_vec4` variants, as the forward's).
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const bool HAS_GAIN = true;
layout(constant_id = 2) const bool ACCUMULATE = false;
layout(local_size_x_id = 0) in;

#include "rmsnorm_bwd_io.glsl"
layout(push_constant) uniform PushBlock { RmsnormBackwardPush p; };

#include "rill_reduce.glsl"

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform per workgroup
  const uint n = p.dim / ROW_VEC, base = row * n;  // loads per row, the row's first
  afloat dot_sum = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < n; c += WG_SIZE) {
    const row_value g = HAS_GAIN ? ROW_READ(gain, c) : row_value(1.0);
    dot_sum += dot(g * ROW_READ(dy, base + c), ROW_READ(x, base + c));
  }
  dot_sum = rill_workgroup_sum(dot_sum);
  const afloat r = rstd[row];
  const afloat k = r * r * r / afloat(p.dim) * dot_sum;
  for (uint c = gl_LocalInvocationID.x; c < n; c += WG_SIZE) {
    const row_value g = HAS_GAIN ? ROW_READ(gain, c) : row_value(1.0);
    row_value v = r * g * ROW_READ(dy, base + c) - k * ROW_READ(x, base + c);
    if (ACCUMULATE) v += row_value(dx[base + c]);
    dx[base + c] = to_row_store(v);
  }
}
