// rmsnorm_bwd_cpu, f16 storage (CPU drivers); the kernel is in rmsnorm_bwd_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "rmsnorm_bwd_cpu.glsl"
