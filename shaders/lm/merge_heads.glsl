// Concatenates heads: out[l, h * D + d] = in[h, l, d] for in [H, L, D], out [L, H * D].
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { sfloat in_data[]; };
layout(std430, binding = 1) writeonly buffer Out { sfloat out_data[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { HeadsPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.heads * p.len * p.dim) return;
  const uint d = i % p.dim, h = (i / p.dim) % p.heads, l = i / (p.dim * p.heads);
  out_data[i] = in_data[(h * p.len + l) * p.dim + d];
}
