// Matmul, f32 activations, packed f16 weights, the register kernel's texel form (CPU drivers); the kernel is in matmul_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_MATMUL_TEXEL
#define B_F16
#include "matmul_register.glsl"
