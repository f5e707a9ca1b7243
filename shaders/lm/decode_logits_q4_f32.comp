// Fused decoding, the logits: f32 activations, int4 weights (group scales); the kernel is in decode_logits.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define W_INT4
#include "decode_logits.glsl"
