// Matmul, f32 activations, int4 weights (group scales), the register kernel's texel form (CPU drivers); the kernel is in matmul_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_MATMUL_TEXEL
#define B_INT4
#include "matmul_register.glsl"
