// embedding fwd, f16 storage, table packed (w16); the kernel is in embedding_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define B_F16
#include "embedding_fwd.glsl"
