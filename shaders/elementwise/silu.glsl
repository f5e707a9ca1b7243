// SiLU forward y = x sigmoid(x), or (BACKWARD) dx = dy * (s + x s (1 - s)); x, y/dy, dx: [n] sfloat.
#include "rill_common.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const bool BACKWARD = false;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { sfloat x[]; };
layout(std430, binding = 1) readonly buffer Dy { sfloat dy[]; };  // unused in forward
layout(std430, binding = 2) writeonly buffer Out { sfloat out_data[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n) return;
  const afloat v = afloat(x[i]);
  out_data[i] = sfloat(BACKWARD ? afloat(dy[i]) * act_grad(kActSilu, v) : act(kActSilu, v));
}
