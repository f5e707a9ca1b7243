// RMSNorm fwd with f32 storage (f32 arithmetic), 4 elements per load; the kernel is in rmsnorm_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_VECTOR_ROWS
#include "rmsnorm_fwd.glsl"
