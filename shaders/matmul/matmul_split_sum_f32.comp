// Matmul split along K, the sum of the partial products, f32 storage; the kernel is in matmul_split_sum.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_split_sum.glsl"
