// merge_heads_tx, f32 storage (CPU drivers: 4 elements per invocation, read as a texel); the kernel is in merge_heads.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_TEXEL_ROWS
#include "merge_heads.glsl"
