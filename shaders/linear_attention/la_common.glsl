// Shared pieces of the linear-attention kernels. Per (batch, head) bh: q, k [N, Dk], v, o [N, Dv]
// (sfloat), state S [Dk, Dv] (f32), decay lambda per head (f32; 1 = none). The feature map phi
// (feature_map.glsl) applies to q and k.
#include "rill_common.glsl"
#include "feature_map.glsl"

layout(constant_id = 2) const bool HAS_DECAY = false;
