// Linear attention backward (chunked), f16 storage; the kernel is in la_chunked_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "la_chunked_bwd.glsl"
