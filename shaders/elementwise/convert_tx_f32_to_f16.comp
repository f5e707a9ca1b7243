// convert, f32 -> f16, 4 elements per invocation read as texels (CPU drivers); the kernel is in convert.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_TO_F16
#define RILL_TEXEL_ROWS
#include "convert.glsl"
