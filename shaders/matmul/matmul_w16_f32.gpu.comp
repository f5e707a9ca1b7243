// Matmul, f32 activations, packed f16 weights, gpu variant; the kernel is in matmul_shared.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define B_F16
#include "matmul_shared.glsl"
