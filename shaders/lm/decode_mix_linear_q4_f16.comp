// Fused decoding, a linear-attention layer's mixer: f16 activations, int4 weights (group scales); the kernel is in decode_mix.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define W_INT4
#include "decode_mix.glsl"
