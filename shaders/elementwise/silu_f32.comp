// silu, f32 storage; the kernel is in silu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "silu.glsl"
