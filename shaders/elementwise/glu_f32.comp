// glu, f32 storage; the kernel is in glu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "glu.glsl"
