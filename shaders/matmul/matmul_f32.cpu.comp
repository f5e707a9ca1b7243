// Matmul, f32 storage, cpu variant; the kernel is in matmul_register.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_register.glsl"
