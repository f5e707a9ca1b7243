// RMSNorm bwd gain with f32 storage (f32 arithmetic); the kernel is in rmsnorm_bwd_gain.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_bwd_gain.glsl"
