// Shared pieces of the linear-attention kernels. Per (batch, head) bh: q, k [N, Dk], v, o [N, Dv]
// (sfloat), state S [Dk, Dv] (f32), decay lambda per head (f32; 1 = none). The feature map phi
// (feature_map.glsl) applies to q and k.
#include "rill_common.glsl"
#include "feature_map.glsl"

layout(constant_id = 2) const bool HAS_DECAY = false;

// lambda^m for the decay lambda in [0, 1]: GLSL leaves pow(0, 0) undefined (lavapipe gives 0), and
// a head with decay 0 (each position sees only itself) needs lambda^0 = 1.
afloat decay_pow(afloat lambda, afloat m) { return m == 0.0 ? 1.0 : pow(lambda, m); }
