// rmsnorm_residual_fwd_register, f32 storage; the kernel is in rmsnorm_fwd_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RESIDUAL
#include "rmsnorm_fwd_register.glsl"
