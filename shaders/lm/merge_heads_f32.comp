// merge_heads, f32 storage; the kernel is in merge_heads.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "merge_heads.glsl"
