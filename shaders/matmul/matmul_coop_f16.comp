// Matmul, f16 storage, on VK_NV_cooperative_matrix fragments; the kernel is in matmul_coop.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_COOP_NV
#include "matmul_coop.glsl"
