// SiLU forward y = x sigmoid(x), or (BACKWARD) dx = dy * (s + x s (1 - s)); x, y/dy, dx: [n] sfloat.
// RILL_TEXEL_ROWS: 4 elements per invocation, inputs read as texels (elementwise_texels.glsl).
#include "elementwise_texels.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const bool BACKWARD = false;
layout(local_size_x_id = 0) in;

EW_INPUT(0, X, x)
EW_INPUT(1, Dy, dy)  // unused in forward
EW_OUTPUT(2, Out, out_data)
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n / EW_VEC) return;
  const ew_value v = EW_READ(x, i), g = BACKWARD ? EW_READ(dy, i) : ew_value(0.0);
  ew_value r;
  [[unroll]] for (uint e = 0; e < EW_VEC; ++e)
    EW_AT(r, e) = BACKWARD ? EW_AT(g, e) * act_grad(kActSilu, EW_AT(v, e)) : act(kActSilu, EW_AT(v, e));
  out_data[i] = to_ew_store(r);
}
