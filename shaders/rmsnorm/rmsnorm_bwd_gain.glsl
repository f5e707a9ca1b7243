// RMSNorm backward for the gain: dgain[c] = sum_r dy[r,c] * x[r,c] * rstd[r], one invocation per
// column, rows summed in order (deterministic, no atomics).
// x, dy: [rows, dim] sfloat; rstd: [rows] f32; dgain: [dim] f32.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { sfloat x[]; };
layout(std430, binding = 1) readonly buffer Rstd { float rstd[]; };
layout(std430, binding = 2) readonly buffer Dy { sfloat dy[]; };
layout(std430, binding = 3) writeonly buffer Dgain { float dgain[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint dim;
} p;

void main() {
  const uint c = rill_global_index();
  if (c >= p.dim) return;
  afloat sum = 0.0;
  for (uint r = 0; r < p.rows; ++r) sum += afloat(dy[r * p.dim + c]) * afloat(x[r * p.dim + c]) * rstd[r];
  dgain[c] = sum;
}
