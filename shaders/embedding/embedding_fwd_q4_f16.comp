// embedding fwd, f16 storage, table packed (q4); the kernel is in embedding_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define B_INT4
#include "embedding_fwd.glsl"
