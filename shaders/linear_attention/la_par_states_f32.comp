// Parallel chunked linear attention (states pass), f32 storage; the kernel is in la_par_states.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_par_states.glsl"
