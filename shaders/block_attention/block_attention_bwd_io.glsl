// The interface of the block-attention backward kernels (block_attention_bwd.glsl,
// block_attention_bwd_tiled.glsl, block_attention_bwd_cpu.glsl): q, k, dq, dk: [BH, N, Dk];
// v, o, do, dv: [BH, N, Dv] sfloat; lse, delta: [BH, N] f32 (delta written, and read back by the
// generic kernel's second dispatch). Rows are read in units of row_store (vector_rows.glsl); q, k,
// v, o and do as texels with RILL_TEXEL_ROWS.
#include "vector_rows.glsl"
#ifdef RILL_TEXEL_ROWS
layout(binding = 0) uniform samplerBuffer q;
layout(binding = 1) uniform samplerBuffer k;
layout(binding = 2) uniform samplerBuffer v;
layout(binding = 3) uniform samplerBuffer o;
layout(binding = 4) uniform samplerBuffer dout;
#else
layout(std430, binding = 0) readonly buffer Q { row_store q[]; };
layout(std430, binding = 1) readonly buffer K { row_store k[]; };
layout(std430, binding = 2) readonly buffer V { row_store v[]; };
layout(std430, binding = 3) readonly buffer O { row_store o[]; };
layout(std430, binding = 4) readonly buffer Do { row_store dout[]; };
#endif
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
layout(std430, binding = 6) buffer Delta { float delta[]; };
layout(std430, binding = 7) writeonly buffer Dq { row_store dq[]; };
layout(std430, binding = 8) writeonly buffer Dk { row_store dk[]; };
layout(std430, binding = 9) writeonly buffer Dv { row_store dv[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { BlockAttentionPush p; };
