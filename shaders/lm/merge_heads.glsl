// Concatenates heads: out[l, h * D + d] = in[h, l, d] for in [H, L, D], out [L, H * D]. One element
// per invocation, or with RILL_TEXEL_ROWS (D a multiple of 4) 4 adjacent ones, read as a texel
// (elementwise_texels.glsl).
#include "elementwise_texels.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

EW_INPUT(0, In, in_data)
EW_OUTPUT(1, Out, out_data)
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { HeadsPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.heads * p.len * p.dim / EW_VEC) return;
  const uint e = i * EW_VEC;  // the first element of out this invocation writes
  const uint d = e % p.dim, h = (e / p.dim) % p.heads, l = e / (p.dim * p.heads);
  out_data[i] = to_ew_store(EW_READ(in_data, ((h * p.len + l) * p.dim + d) / EW_VEC));
}
