// Block attention backward for CPU drivers, f32 storage; the kernel is in block_attention_bwd_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "block_attention_bwd_cpu.glsl"
