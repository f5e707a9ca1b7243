// glu_bwd_tx, f16 storage (CPU drivers: 4 elements per invocation, inputs read as texels); the kernel is in glu_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_TEXEL_ROWS
#include "glu_bwd.glsl"
