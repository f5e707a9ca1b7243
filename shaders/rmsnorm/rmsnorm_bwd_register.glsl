// RMSNorm backward with rows in registers, for CPU drivers and for GPUs' narrow rows: dx and the
// first level of dgain in one pass (the generic path reads x, dy and the gain twice for dx, then x
// and dy again for dgain; on lavapipe every per-lane load is a loop over the lanes, and on a GPU
// every pass over a short row is a wait on memory). A workgroup walks one block of rows_per_block
// rows with its WG_SIZE / SG subgroups (one on CPU drivers), subgroup s taking rows s, s + SUBS, ...
// of the block; each keeps its lanes' share of a row (R loads each, a specialization constant so
// that the arrays are unrolled) and of the gain and of its dgain sums. A load is one element, or 4
// adjacent ones with RILL_VECTOR_ROWS (vector_rows.glsl); lane l takes loads l, l + SG, ... With
// gd = gain * dy and r = rstd[row]:
//   dx[c] = r * gd[c] - (r^3 / dim) * x[c] * sum_k(gd[k] * x[k])   (ACCUMULATE: added to dx)
//   partial[block, c] = sum over the subgroups, in order, of each one's rows' dy[c] * x[c] * r,
//                       summed in order   (DGAIN)
// rmsnorm_bwd_gain_sum then adds the blocks in order (deterministic, as the generic path). The plan
// runs it only where every subgroup has exactly SG lanes.
// x, dy, dx: [rows, dim] sfloat; gain: [dim] sfloat; rstd: [rows] f32; partial: [blocks, dim] f32.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint SG = 8;  // the device's subgroup size
layout(constant_id = 1) const bool HAS_GAIN = true;
layout(constant_id = 2) const bool ACCUMULATE = false;
layout(constant_id = 3) const uint R = 32;  // loads per lane: ceil(dim / (SG * elements per load))
layout(constant_id = 4) const bool DGAIN = true;
layout(constant_id = 5) const uint WG_SIZE = 8;  // a multiple of SG
layout(local_size_x_id = 5) in;
const uint SUBS = WG_SIZE / SG;  // subgroups per workgroup

#include "rmsnorm_bwd_io.glsl"
layout(std430, binding = 5) writeonly buffer Partial { row_value partial[]; };
layout(push_constant) uniform PushBlock { RmsnormGainPush p; };

// Each subgroup's dgain sums, [subgroup][load], for their ordered sum (SUBS > 1).
shared row_value sub_sums[SUBS > 1u ? SUBS * R * SG : 1u];

void main() {
  const uint lane = gl_SubgroupInvocationID, sub = gl_SubgroupID;
  const uint block = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint first = block * p.rows_per_block;
  if (first >= p.rows) return;  // the whole workgroup
  const uint n = p.dim / ROW_VEC;  // loads per row
  // Lanes past the row's end work on a clamped copy of its last load and never store it.
  row_value g[R], dg[R];
  [[unroll]] for (uint c = 0; c < R; ++c) {
    g[c] = HAS_GAIN ? ROW_READ(gain, min(c * SG + lane, n - 1)) : row_value(1.0);
    dg[c] = row_value(0.0);
  }
  const uint last = min(first + p.rows_per_block, p.rows);
  for (uint row = first + sub; row < last; row += SUBS) {
    const uint base = row * n;
    row_value xv[R], dyv[R];
    afloat dot_sum = 0.0;
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint k = min(c * SG + lane, n - 1);
      xv[c] = ROW_READ(x, base + k);
      dyv[c] = ROW_READ(dy, base + k);
      dot_sum += c * SG + lane < n ? dot(g[c] * dyv[c], xv[c]) : 0.0;
    }
    const afloat r = rstd[row];
    const afloat s = r * r * r / afloat(p.dim) * subgroupAdd(dot_sum);
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint k = c * SG + lane;
      if (DGAIN) dg[c] += dyv[c] * xv[c] * r;
      if (k < n) {
        row_value v = r * g[c] * dyv[c] - s * xv[c];
        if (ACCUMULATE) v += row_value(dx[base + k]);
        dx[base + k] = to_row_store(v);
      }
    }
  }
  if (!DGAIN) return;
  if (SUBS == 1u) {
    [[unroll]] for (uint c = 0; c < R; ++c)
      if (c * SG + lane < n) partial[block * n + c * SG + lane] = dg[c];
    return;
  }
  [[unroll]] for (uint c = 0; c < R; ++c) sub_sums[sub * R * SG + c * SG + lane] = dg[c];
  barrier();  // every subgroup's sums -> their ordered sum
  for (uint k = gl_LocalInvocationID.x; k < n; k += WG_SIZE) {
    row_value sum = sub_sums[k];
    for (uint t = 1u; t < SUBS; ++t) sum += sub_sums[t * R * SG + k];
    partial[block * n + k] = sum;
  }
}
