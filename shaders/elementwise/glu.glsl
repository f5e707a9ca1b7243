// Gated linear unit: out = a * act(b) (ACT 0 identity, 1 sigmoid, 2 silu); a, b, out: [n] sfloat.
#include "rill_common.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint ACT = 2;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) writeonly buffer Out { sfloat out_data[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n) return;
  out_data[i] = sfloat(afloat(a[i]) * act(ACT, afloat(b[i])));
}
