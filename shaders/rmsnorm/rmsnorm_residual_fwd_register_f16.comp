// rmsnorm_residual_fwd_register, f16 storage; the kernel is in rmsnorm_fwd_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RESIDUAL
#include "rmsnorm_fwd_register.glsl"
