// token_log_probs, f32 storage; the kernel is in token_log_probs.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "token_log_probs.glsl"
