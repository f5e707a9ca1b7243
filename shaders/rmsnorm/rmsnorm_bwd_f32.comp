// RMSNorm bwd with f32 storage (f32 arithmetic); the kernel is in rmsnorm_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_bwd.glsl"
