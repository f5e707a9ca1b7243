// Block attention backward for CPU drivers, f16 storage; the kernel is in block_attention_bwd_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "block_attention_bwd_cpu.glsl"
