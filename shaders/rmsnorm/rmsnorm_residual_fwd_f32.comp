// RMSNorm of (x + residual), writing the sum too, with f32 storage; the kernel is in rmsnorm_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RESIDUAL
#include "rmsnorm_fwd.glsl"
