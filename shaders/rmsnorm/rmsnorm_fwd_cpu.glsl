// RMSNorm forward for CPU drivers (same contract as rmsnorm_fwd.glsl). The generic kernel reads a
// row twice (sum of squares, then normalise) and the gain once per row; on lavapipe every such
// per-lane load is a loop over the lanes. Here a workgroup is one subgroup that keeps its lanes'
// share of the row (R = ceil(dim / SG) values each, a specialization constant so that the arrays
// stay in registers) and of the gain, and walks ROWS rows: each element is read once and written
// once, and the gain is read once per ROWS rows. Lane l takes elements l, l + SG, ...
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint SG = 8;  // the device's subgroup size = the workgroup size
layout(constant_id = 1) const bool HAS_GAIN = true;
layout(constant_id = 2) const uint R = 32;
layout(constant_id = 3) const uint ROWS = 16;
layout(local_size_x_id = 0) in;

#include "rmsnorm_fwd_io.glsl"

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint first = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * ROWS;
  if (first >= p.rows) return;  // the whole workgroup
  afloat g[R];
  [[unroll]] for (uint c = 0; c < R; ++c) {
    const uint i = min(c * SG + lane, p.dim - 1);
    g[c] = HAS_GAIN ? afloat(gain[i]) : 1.0;
  }
  const uint last = min(first + ROWS, p.rows);
  for (uint row = first; row < last; ++row) {
    const uint base = row * p.dim;
    afloat v[R];
    afloat ss = 0.0;
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint i = c * SG + lane;
      v[c] = i < p.dim ? load_input(base + min(i, p.dim - 1)) : 0.0;
      ss += v[c] * v[c];
    }
    const afloat r = inversesqrt(subgroupAdd(ss) / afloat(p.dim) + p.eps);
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint i = c * SG + lane;
      if (i < p.dim) {
#ifdef RESIDUAL
        h[base + i] = sfloat(v[c]);
#endif
        y[base + i] = sfloat(v[c] * r * g[c]);
      }
    }
    if (lane == 0) rstd[row] = r;
  }
}
