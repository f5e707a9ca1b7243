// The interface both block-attention forward kernels share (block_attention_fwd.glsl and the
// CPU-driver block_attention_fwd_cpu.glsl): q, k [BH, N, Dk], v, o [BH, N, Dv] sfloat;
// lse [BH, N] f32. Rows are read in units of row_store (vector_rows.glsl), q, k and v as texels
// with RILL_TEXEL_ROWS.
#include "vector_rows.glsl"
#ifdef RILL_TEXEL_ROWS
layout(binding = 0) uniform samplerBuffer q;
layout(binding = 1) uniform samplerBuffer k;
layout(binding = 2) uniform samplerBuffer v;
#else
layout(std430, binding = 0) readonly buffer Q { row_store q[]; };
layout(std430, binding = 1) readonly buffer K { row_store k[]; };
layout(std430, binding = 2) readonly buffer V { row_store v[]; };
#endif
layout(std430, binding = 3) writeonly buffer O { row_store o[]; };
layout(std430, binding = 4) writeonly buffer Lse { float lse[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { BlockAttentionPush p; };
