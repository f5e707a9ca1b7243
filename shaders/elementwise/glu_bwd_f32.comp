// glu bwd, f32 storage; the kernel is in glu_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "glu_bwd.glsl"
