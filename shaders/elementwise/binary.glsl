// out = a + b (OP 0) or a * b (OP 1), elementwise over n elements; a, b, out: [n] sfloat.
// RILL_TEXEL_ROWS: 4 elements per invocation, inputs read as texels (elementwise_texels.glsl).
#include "elementwise_texels.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint OP = 0;
layout(local_size_x_id = 0) in;

EW_INPUT(0, A, a)
EW_INPUT(1, B, b)
EW_OUTPUT(2, Out, out_data)
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n / EW_VEC) return;
  const ew_value x = EW_READ(a, i), y = EW_READ(b, i);
  out_data[i] = to_ew_store(OP == kBinaryAdd ? x + y : x * y);
}
