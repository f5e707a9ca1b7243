// Fused decoding, the logits: f32 activations, weights in the storage type; the kernel is in decode_logits.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "decode_logits.glsl"
