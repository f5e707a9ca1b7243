// block_attention_fwd_cpu_tx, f16 storage (CPU drivers, q, k and v read as 4-element texels); the kernel is in block_attention_fwd_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_VECTOR_ROWS
#define RILL_TEXEL_ROWS
#include "block_attention_fwd_cpu.glsl"
