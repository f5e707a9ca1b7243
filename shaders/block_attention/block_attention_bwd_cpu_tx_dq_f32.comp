// block_attention_bwd_cpu_tx_dq, f32 storage (CPU drivers, the dq = dS K dispatches: rows and dS read as 4-element texels); the kernel is in block_attention_bwd_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_VECTOR_ROWS
#define RILL_TEXEL_ROWS
#define RILL_SCORES_TEXELS
#include "block_attention_bwd_cpu.glsl"
