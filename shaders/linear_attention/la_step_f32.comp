// Linear attention (step), f32 storage; the kernel is in la_step.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_step.glsl"
