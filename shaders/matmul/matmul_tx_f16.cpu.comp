// Matmul, f16 storage, the register kernel's texel form (CPU drivers); the kernel is in matmul_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_MATMUL_TEXEL
#include "matmul_register.glsl"
