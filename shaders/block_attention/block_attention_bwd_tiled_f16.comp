// Block attention backward, tiled for GPUs, f16 storage; the kernel is in block_attention_bwd_tiled.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "block_attention_bwd_tiled.glsl"
