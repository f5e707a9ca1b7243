// Fused decoding, the logits: f16 activations, weights in the storage type; the kernel is in decode_logits.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "decode_logits.glsl"
