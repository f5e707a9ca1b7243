// merge_heads, f16 storage; the kernel is in merge_heads.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "merge_heads.glsl"
