// rmsnorm_bwd_cpu, f32 storage (CPU drivers); the kernel is in rmsnorm_bwd_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_bwd_cpu.glsl"
