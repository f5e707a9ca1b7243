// rmsnorm_bwd_gain_tx, f16 storage (CPU drivers: rows read as 4-element texels); the kernel is in rmsnorm_bwd_gain.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_VECTOR_ROWS
#define RILL_TEXEL_ROWS
#include "rmsnorm_bwd_gain.glsl"
