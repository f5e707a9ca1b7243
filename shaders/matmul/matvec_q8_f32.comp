// Matmul of a few rows, f32 activations, int8 weights (group scales); the kernel is in matvec_packed.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define B_INT8
#include "matvec_packed.glsl"
