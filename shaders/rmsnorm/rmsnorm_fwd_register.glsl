// RMSNorm forward with rows in registers (same contract as rmsnorm_fwd.glsl), for CPU drivers and
// for GPUs' narrow rows. The generic kernel reads a row twice (sum of squares, then normalise) and
// the gain once per row; on lavapipe every such per-lane load is a loop over the lanes, and on a GPU
// each of a short row's passes is a wait on memory. Here each subgroup keeps its lanes' share of
// the row (R loads each, a specialization constant so that the arrays stay in registers, all issued
// before the row's sum) and of the gain, and walks ROWS rows: each element is read once and written
// once, and the gain is read once per ROWS rows. A workgroup is WG_SIZE / SG subgroups with rows of
// their own (one on CPU drivers). A load is one element, or 4 adjacent ones with RILL_VECTOR_ROWS
// (rows a multiple of 4; vector_rows.glsl); lane l takes loads l, l + SG, ... The plan runs it only
// where every subgroup has exactly SG lanes.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "rill_common.glsl"
#include "rms_inverse.glsl"

layout(constant_id = 0) const uint SG = 8;  // the device's subgroup size
layout(constant_id = 1) const bool HAS_GAIN = true;
layout(constant_id = 2) const uint R = 32;  // loads per lane: ceil(dim / (SG * elements per load))
layout(constant_id = 3) const uint ROWS = 16;
layout(constant_id = 4) const uint WG_SIZE = 8;  // a multiple of SG
layout(local_size_x_id = 4) in;

#include "rmsnorm_fwd_io.glsl"

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint group = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * (WG_SIZE / SG) + gl_SubgroupID;
  const uint first = group * ROWS;
  if (first >= p.rows) return;  // the whole subgroup (no barriers here)
  const uint n = p.dim / ROW_VEC;  // loads per row
  // Lanes past the row's end work on a clamped copy of its last load and never store it.
  row_value g[R];
  [[unroll]] for (uint c = 0; c < R; ++c) g[c] = HAS_GAIN ? load_gain(min(c * SG + lane, n - 1)) : row_value(1.0);
  const uint last = min(first + ROWS, p.rows);
  for (uint row = first; row < last; ++row) {
    const uint base = row * n;
    row_value v[R];
    afloat ss = 0.0;
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint k = c * SG + lane;
      v[c] = k < n ? load_input(base + min(k, n - 1)) : row_value(0.0);
      ss += dot(v[c], v[c]);
    }
    const afloat r = rms_inverse(subgroupAdd(ss), afloat(p.dim), p.eps);
    [[unroll]] for (uint c = 0; c < R; ++c) {
      const uint k = c * SG + lane;
      if (k < n) {
#ifdef RESIDUAL
        h[base + k] = to_row_store(v[c]);
#endif
        y[base + k] = to_row_store(v[c] * r * g[c]);
      }
    }
    if (lane == 0) rstd[row] = r;
  }
}
