// convert, f16 -> f32; the kernel is in convert.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "convert.glsl"
