// Block attention forward, flash-style for GPUs' blocks past 64, f16 storage; the kernel is in
// block_attention_fwd_flash.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "block_attention_fwd_flash.glsl"
