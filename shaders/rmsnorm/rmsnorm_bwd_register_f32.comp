// rmsnorm_bwd_register, f32 storage; the kernel is in rmsnorm_bwd_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_bwd_register.glsl"
