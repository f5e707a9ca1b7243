// convert, f32 -> f16; the kernel is in convert.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_TO_F16
#include "convert.glsl"
