// token_log_probs, f16 storage; the kernel is in token_log_probs.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "token_log_probs.glsl"
