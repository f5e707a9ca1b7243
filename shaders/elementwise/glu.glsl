// Gated linear unit: out = a * act(b) (ACT 0 identity, 1 sigmoid, 2 silu); a, b, out: [n] sfloat.
// RILL_TEXEL_ROWS: 4 elements per invocation, inputs read as texels (elementwise_texels.glsl).
#include "elementwise_texels.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint ACT = 2;
layout(local_size_x_id = 0) in;

EW_INPUT(0, A, a)
EW_INPUT(1, B, b)
EW_OUTPUT(2, Out, out_data)
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n / EW_VEC) return;
  const ew_value av = EW_READ(a, i), bv = EW_READ(b, i);
  ew_value r;
  [[unroll]] for (uint e = 0; e < EW_VEC; ++e) EW_AT(r, e) = EW_AT(av, e) * act(ACT, EW_AT(bv, e));
  out_data[i] = to_ew_store(r);
}
