// Block attention backward, tiled for GPUs, f32 storage; the kernel is in block_attention_bwd_tiled.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "block_attention_bwd_tiled.glsl"
