// Linear attention backward (chunked), f32 storage; the kernel is in la_chunked_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_chunked_bwd.glsl"
