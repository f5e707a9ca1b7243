// RMSNorm forward, one workgroup per row:
//   rstd[r] = 1 / sqrt(mean_c(x[r,c]^2) + eps),  y[r,c] = x[r,c] * rstd[r] * gain[c]
// With RESIDUAL, the input is h = x + residual (rounded to storage), and h is written too.
// x, residual, h, y: [rows, dim] sfloat; gain: [dim] sfloat (read only when HAS_GAIN); rstd: [rows] f32.
// Rows are read in loads of 1 element, or of 4 with RILL_VECTOR_ROWS (rows a multiple of 4; the
// `_vec4` variants, vector_rows.glsl): a quarter of the loads, and on lavapipe of the loops over
// the lanes that each load costs.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const bool HAS_GAIN = true;
layout(local_size_x_id = 0) in;

#include "rmsnorm_fwd_io.glsl"

#include "rill_reduce.glsl"
#include "rms_inverse.glsl"

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // whole workgroup: uniform, so the barriers below stay legal
  const uint n = p.dim / ROW_VEC, base = row * n;  // loads per row, the row's first
  afloat ss = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < n; c += WG_SIZE) {
    const row_value v = load_input(base + c);
    ss += dot(v, v);
  }
  ss = rill_workgroup_sum(ss);
  const afloat r = rms_inverse(ss, afloat(p.dim), p.eps);
  for (uint c = gl_LocalInvocationID.x; c < n; c += WG_SIZE) {
    const row_value v = load_input(base + c);
#ifdef RESIDUAL
    h[base + c] = to_row_store(v);
#endif
    const row_value g = HAS_GAIN ? load_gain(c) : row_value(1.0);
    y[base + c] = to_row_store(v * r * g);
  }
  if (gl_LocalInvocationID.x == 0) rstd[row] = r;
}
