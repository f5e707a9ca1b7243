// Matmul of a few rows, f32 activations, int4 weights (group scales); the kernel is in matvec_packed.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define B_INT4
#include "matvec_packed.glsl"
