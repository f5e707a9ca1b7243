// embedding fwd, f32 storage, table packed (q8); the kernel is in embedding_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define B_INT8
#include "embedding_fwd.glsl"
