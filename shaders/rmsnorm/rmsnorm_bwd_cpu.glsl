// RMSNorm backward for CPU drivers: dx and the first level of dgain in one pass (the generic path
// reads x, dy and the gain twice for dx, then x and dy again for dgain; on lavapipe every per-lane
// load is a loop over the lanes). A workgroup is one subgroup that walks one block of
// rows_per_block rows, keeping its lanes' share of a row (R = ceil(dim / SG) values each, a
// specialization constant so that the arrays are unrolled) and of the gain and of the block's
// dgain sums. Lane l takes elements l, l + SG, ... With gd = gain * dy and r = rstd[row]:
//   dx[c] = r * gd[c] - (r^3 / dim) * x[c] * sum_k(gd[k] * x[k])   (ACCUMULATE: added to dx)
//   partial[block, c] = sum over the block's rows, in order, of dy[c] * x[c] * r   (DGAIN)
// rmsnorm_bwd_gain_sum then adds the blocks in order (deterministic, as the generic path).
// x, dy, dx: [rows, dim] sfloat; gain: [dim] sfloat; rstd: [rows] f32; partial: [blocks, dim] f32.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint SG = 8;  // the device's subgroup size = the workgroup size
layout(constant_id = 1) const bool HAS_GAIN = true;
layout(constant_id = 2) const bool ACCUMULATE = false;
layout(constant_id = 3) const uint R = 32;
layout(constant_id = 4) const bool DGAIN = true;
layout(local_size_x_id = 0) in;

#include "rmsnorm_bwd_io.glsl"
layout(std430, binding = 5) writeonly buffer Partial { float partial[]; };
layout(push_constant) uniform PushBlock { RmsnormGainPush p; };

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint block = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint first = block * p.rows_per_block;
  if (first >= p.rows) return;  // the whole workgroup
  // Lanes past the row's end work on a clamped copy of its last element and never store it.
  afloat g[R], dg[R];
  [[unroll]] for (uint c = 0; c < R; ++c) {
    g[c] = HAS_GAIN ? afloat(gain[min(c * SG + lane, p.dim - 1)]) : 1.0;
    dg[c] = 0.0;
  }
  const uint last = min(first + p.rows_per_block, p.rows);
  for (uint row = first; row < last; ++row) {
    const uint base = row * p.dim;
    afloat xv[R], dyv[R];
    afloat dot = 0.0;
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint i = min(c * SG + lane, p.dim - 1);
      xv[c] = afloat(x[base + i]);
      dyv[c] = afloat(dy[base + i]);
      dot += c * SG + lane < p.dim ? g[c] * dyv[c] * xv[c] : 0.0;
    }
    const afloat r = rstd[row];
    const afloat k = r * r * r / afloat(p.dim) * subgroupAdd(dot);
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint i = c * SG + lane;
      if (DGAIN) dg[c] += dyv[c] * xv[c] * r;
      if (i < p.dim) {
        afloat v = r * g[c] * dyv[c] - k * xv[c];
        if (ACCUMULATE) v += afloat(dx[base + i]);
        dx[base + i] = sfloat(v);
      }
    }
  }
  if (DGAIN)
    [[unroll]] for (uint c = 0; c < R; ++c)
      if (c * SG + lane < p.dim) partial[block * p.dim + c * SG + lane] = dg[c];
}
