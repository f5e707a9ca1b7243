// LRPE (TransNormerLLM's Lrpe) on q or k: per head h, row t at absolute position pos + t,
//   y[h, t, j] = phi(x[h, t, j]) cos(a), y[h, t, Dh + j] = phi(x[h, t, j]) sin(a), a = theta_{h,j} (pos + t).
// The angle's (cos, sin) come from three tables the host fills in double precision, so long
// positions lose nothing to f32 angles: base = a at pos (this call), coarse = at 64 * (t / 64),
// fine = at t % 64; the rotation is their complex product. x [H, L, Dh], y [H, L, 2 Dh] (sfloat);
// base [H * Dh], coarse [ceil(L / 64), H * Dh], fine [64, H * Dh] (vec2: cos, sin).
#include "rill_common.glsl"
#include "feature_map.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { sfloat x[]; };
layout(std430, binding = 1) readonly buffer Base { vec2 base[]; };
layout(std430, binding = 2) readonly buffer Coarse { vec2 coarse[]; };
layout(std430, binding = 3) readonly buffer Fine { vec2 fine[]; };
layout(std430, binding = 4) writeonly buffer Out { sfloat y[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { HeadsPush p; };

vec2 rotate(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

void main() {
  const uint i = rill_global_index();
  if (i >= p.heads * p.len * p.dim) return;
  const uint j = i % p.dim, t = (i / p.dim) % p.len, h = i / (p.dim * p.len);
  const uint channel = h * p.dim + j, channels = p.heads * p.dim;
  const vec2 r = rotate(rotate(base[channel], coarse[(t / 64) * channels + channel]), fine[(t % 64) * channels + channel]);
  const afloat v = phi(afloat(x[i]));
  const uint row = (h * p.len + t) * 2 * p.dim;
  y[row + j] = to_sfloat(v * r.x);
  y[row + p.dim + j] = to_sfloat(v * r.y);
}
