// RMSNorm bwd gain with f16 storage (f32 arithmetic), 4 columns per invocation; the kernel is in rmsnorm_bwd_gain.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_VECTOR_ROWS
#include "rmsnorm_bwd_gain.glsl"
