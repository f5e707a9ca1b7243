// embedding bwd, f32 storage; the kernel is in embedding_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "embedding_bwd.glsl"
