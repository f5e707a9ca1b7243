// Matmul, f32 activations, int4 weights (group scales), gpu variant; the kernel is in matmul_shared.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define B_INT4
#include "matmul_shared.glsl"
