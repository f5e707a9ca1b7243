// Linear attention (naive), f32 storage; the kernel is in la_naive.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_naive.glsl"
