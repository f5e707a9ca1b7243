// Parallel chunked linear attention (states pass), f16 storage; the kernel is in la_par_states.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "la_par_states.glsl"
