// Fused decoding, a linear-attention layer's mixer: f32 activations, weights in the storage type; the kernel is in decode_mix.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "decode_mix.glsl"
