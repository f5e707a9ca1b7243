// RMSNorm backward for the gain, first level: partial[b, c] = sum over the rows r of block b of
// dy[r,c] * x[r,c] * rstd[r]. Workgroup (x, b): WG_SIZE neighbouring columns (coalesced loads) of
// row block b (ROWS_PER_BLOCK rows, summed in order). With one block the partial sums are dgain
// itself; otherwise rmsnorm_bwd_gain_sum adds the blocks in order: deterministic, no atomics, and
// parallel over rows as well as columns (a tall, thin input has few columns).
// x, dy: [rows, dim] sfloat; rstd: [rows] f32; partial: [blocks, dim] f32. An invocation takes one
// column, or 4 adjacent ones with RILL_VECTOR_ROWS (dim a multiple of 4; vector_rows.glsl), with
// RILL_TEXEL_ROWS read as texels.
#include "vector_rows.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

#ifdef RILL_TEXEL_ROWS
layout(binding = 0) uniform samplerBuffer x;
layout(binding = 2) uniform samplerBuffer dy;
#else
layout(std430, binding = 0) readonly buffer X { row_store x[]; };
layout(std430, binding = 2) readonly buffer Dy { row_store dy[]; };
#endif
layout(std430, binding = 1) readonly buffer Rstd { float rstd[]; };
layout(std430, binding = 3) writeonly buffer Partial { row_value partial[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { RmsnormGainPush p; };

void main() {
  const uint c = gl_GlobalInvocationID.x, block = gl_WorkGroupID.y, n = p.dim / ROW_VEC;
  if (c >= n) return;
  const uint first = block * p.rows_per_block, last = min(first + p.rows_per_block, p.rows);
  row_value sum = row_value(0.0);
  for (uint r = first; r < last; ++r) sum += ROW_READ(dy, r * n + c) * ROW_READ(x, r * n + c) * rstd[r];
  partial[block * n + c] = sum;
}
