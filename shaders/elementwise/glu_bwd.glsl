// GLU backward: da = dy * act(b), db = dy * a * act'(b); all [n] sfloat.
#include "rill_common.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint ACT = 2;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) readonly buffer Dy { sfloat dy[]; };
layout(std430, binding = 3) writeonly buffer Da { sfloat da[]; };
layout(std430, binding = 4) writeonly buffer Db { sfloat db[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n) return;
  const afloat g = afloat(dy[i]), av = afloat(a[i]), bv = afloat(b[i]);
  da[i] = sfloat(g * act(ACT, bv));
  db[i] = sfloat(g * av * act_grad(ACT, bv));
}
