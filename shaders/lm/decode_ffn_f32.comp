// Fused decoding, a layer's FFN: f32 activations, weights in the storage type; the kernel is in decode_ffn.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "decode_ffn.glsl"
