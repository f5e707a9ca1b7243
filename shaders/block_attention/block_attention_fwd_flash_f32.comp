// Block attention forward, flash-style for GPUs' blocks past 64, f32 storage; the kernel is in
// block_attention_fwd_flash.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "block_attention_fwd_flash.glsl"
