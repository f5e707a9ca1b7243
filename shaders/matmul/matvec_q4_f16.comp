// Matmul of a few rows, f16 activations, int4 weights (group scales); the kernel is in matvec_packed.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define B_INT4
#include "matvec_packed.glsl"
