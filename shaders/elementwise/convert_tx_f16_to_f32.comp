// convert, f16 -> f32, 4 elements per invocation read as texels (CPU drivers); the kernel is in convert.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_TEXEL_ROWS
#include "convert.glsl"
