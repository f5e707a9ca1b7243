// token_log_probs, f32 storage, without subgroup arithmetic; the kernel is in token_log_probs.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_NO_SUBGROUP_ARITHMETIC
#include "token_log_probs.glsl"
