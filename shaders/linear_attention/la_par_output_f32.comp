// Parallel chunked linear attention (output pass), f32 storage; the kernel is in la_par_output.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_par_output.glsl"
