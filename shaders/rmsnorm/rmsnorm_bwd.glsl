// RMSNorm backward for the input, one workgroup per row. With gd = gain * dy (gain = 1 without it)
// and r = rstd[row], differentiating y = x * r * gain where r = (mean(x^2) + eps)^-1/2:
//   dx[c] = r * gd[c] - (r^3 / dim) * x[c] * sum_k(gd[k] * x[k])
// ACCUMULATE adds into dx instead of overwriting it (the backward of a residual add).
// x, dy, dx: [rows, dim] sfloat; gain: [dim] sfloat; rstd: [rows] f32.
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
  const uint base = row * p.dim;
  afloat dot = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.dim; c += WG_SIZE) {
    const afloat g = HAS_GAIN ? afloat(gain[c]) : 1.0;
    dot += g * afloat(dy[base + c]) * afloat(x[base + c]);
  }
  dot = rill_workgroup_sum(dot);
  const afloat r = rstd[row];
  const afloat k = r * r * r / afloat(p.dim) * dot;
  for (uint c = gl_LocalInvocationID.x; c < p.dim; c += WG_SIZE) {
    const afloat g = HAS_GAIN ? afloat(gain[c]) : 1.0;
    afloat v = r * g * afloat(dy[base + c]) - k * afloat(x[base + c]);
    if (ACCUMULATE) v += afloat(dx[base + c]);
    dx[base + c] = sfloat(v);
  }
}
