// binary, f32 storage; the kernel is in binary.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "binary.glsl"
