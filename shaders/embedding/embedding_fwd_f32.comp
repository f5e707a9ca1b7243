// embedding fwd, f32 storage; the kernel is in embedding_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "embedding_fwd.glsl"
