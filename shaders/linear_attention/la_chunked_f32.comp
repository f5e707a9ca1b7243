// Linear attention (chunked), f32 storage; the kernel is in la_chunked.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_chunked.glsl"
