// Shared pieces of the linear-attention kernels. Per (batch, head) bh: q, k [N, Dk], v, o [N, Dv]
// (sfloat), state S [Dk, Dv] (f32), decay lambda per head (f32; 1 = none). The feature map phi
// applies to q and k: 0 identity, 1 elu(x) + 1, 2 relu.
#include "rill_common.glsl"

layout(constant_id = 1) const uint FEATURE = 0;
layout(constant_id = 2) const bool HAS_DECAY = false;

afloat phi(afloat x) {
  if (FEATURE == 1) return x > 0.0 ? x + 1.0 : exp(x);
  if (FEATURE == 2) return max(x, 0.0);
  return x;
}
