// out = a + b (OP 0) or a * b (OP 1), elementwise over n elements; a, b, out: [n] sfloat.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint OP = 0;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) writeonly buffer Out { sfloat out_data[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n) return;
  const afloat x = afloat(a[i]), y = afloat(b[i]);
  out_data[i] = sfloat(OP == kBinaryAdd ? x + y : x * y);
}
