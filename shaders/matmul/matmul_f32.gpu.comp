// Matmul, f32 storage, gpu variant; the kernel is in matmul_shared.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_shared.glsl"
