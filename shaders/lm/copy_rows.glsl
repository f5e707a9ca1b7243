// Copies a range of rows between batched matrices of one row length:
//   dst[b, dst_first + r, :] = src[b, src_first + r, :]   for b < batches, r < rows.
// Used to keep the last partial block of keys and values after a prefill.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { sfloat src[]; };
layout(std430, binding = 1) writeonly buffer Dst { sfloat dst[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { CopyRowsPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.batches * p.rows * p.cols) return;
  const uint c = i % p.cols, r = (i / p.cols) % p.rows, b = i / (p.cols * p.rows);
  dst[(b * p.dst_rows + p.dst_first + r) * p.cols + c] = src[(b * p.src_rows + p.src_first + r) * p.cols + c];
}
