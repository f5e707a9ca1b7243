// Parallel chunked linear attention (output pass), f16 inputs and an f32 output; the kernel is in la_par_output.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_OUTPUT_F32
#include "la_par_output.glsl"
