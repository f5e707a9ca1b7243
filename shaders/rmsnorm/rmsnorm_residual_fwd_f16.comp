// RMSNorm of (x + residual), writing the sum too, with f16 storage; the kernel is in rmsnorm_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RESIDUAL
#include "rmsnorm_fwd.glsl"
