// RMSNorm of (x + residual), writing the sum too, with f32 storage, without subgroup arithmetic, 4 elements per load; the kernel is in rmsnorm_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RESIDUAL
#define RILL_NO_SUBGROUP_ARITHMETIC
#define RILL_VECTOR_ROWS
#include "rmsnorm_fwd.glsl"
