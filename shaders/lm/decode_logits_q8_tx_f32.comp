// Fused decoding, the logits: f32 activations, int8 weights (group scales) read as texels (vk/texel_views.hpp); the kernel is in decode_logits.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define W_INT8
#define W_TEXEL
#include "decode_logits.glsl"
