// rmsnorm_fwd_register_vec4, f32 storage (4 elements per load); the kernel is in rmsnorm_fwd_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_VECTOR_ROWS
#include "rmsnorm_fwd_register.glsl"
