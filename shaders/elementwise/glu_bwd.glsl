// GLU backward: da = dy * act(b), db = dy * a * act'(b); all [n] sfloat.
// RILL_TEXEL_ROWS: 4 elements per invocation, inputs read as texels (elementwise_texels.glsl).
#include "elementwise_texels.glsl"
#include "act.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint ACT = 2;
layout(local_size_x_id = 0) in;

EW_INPUT(0, A, a)
EW_INPUT(1, B, b)
EW_INPUT(2, Dy, dy)
EW_OUTPUT(3, Da, da)
EW_OUTPUT(4, Db, db)
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n / EW_VEC) return;
  const ew_value g = EW_READ(dy, i), av = EW_READ(a, i), bv = EW_READ(b, i);
  ew_value ra, rb;
  [[unroll]] for (uint e = 0; e < EW_VEC; ++e) {
    EW_AT(ra, e) = EW_AT(g, e) * act(ACT, EW_AT(bv, e));
    EW_AT(rb, e) = EW_AT(g, e) * EW_AT(av, e) * act_grad(ACT, EW_AT(bv, e));
  }
  da[i] = to_ew_store(ra);
  db[i] = to_ew_store(rb);
}
