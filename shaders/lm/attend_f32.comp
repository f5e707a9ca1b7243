// attend, f32 storage; the kernel is in attend.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "attend.glsl"
