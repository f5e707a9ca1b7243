// rmsnorm_bwd_register, f16 storage; the kernel is in rmsnorm_bwd_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "rmsnorm_bwd_register.glsl"
