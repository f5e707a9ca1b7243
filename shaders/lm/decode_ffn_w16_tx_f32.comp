// Fused decoding, a layer's FFN: f32 activations, f16-packed weights read as texels (vk/texel_views.hpp); the kernel is in decode_ffn.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define W_F16
#define W_TEXEL
#include "decode_ffn.glsl"
