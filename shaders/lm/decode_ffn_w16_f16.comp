// Fused decoding, a layer's FFN: f16 activations, f16-packed weights; the kernel is in decode_ffn.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define W_F16
#include "decode_ffn.glsl"
