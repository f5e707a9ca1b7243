// lrpe, f32 storage; the kernel is in lrpe.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "lrpe.glsl"
