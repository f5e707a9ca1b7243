// Matmul of a few rows, f32 activations, packed f16 weights; the kernel is in matvec_packed.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define B_F16
#include "matvec_packed.glsl"
