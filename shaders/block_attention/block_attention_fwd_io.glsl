// The interface both block-attention forward kernels share (block_attention_fwd.glsl and the
// CPU-driver block_attention_fwd_cpu.glsl): q, k [BH, N, Dk], v, o [BH, N, Dv] sfloat;
// lse [BH, N] f32.
layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer K { sfloat k[]; };
layout(std430, binding = 2) readonly buffer V { sfloat v[]; };
layout(std430, binding = 3) writeonly buffer O { sfloat o[]; };
layout(std430, binding = 4) writeonly buffer Lse { float lse[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { BlockAttentionPush p; };
