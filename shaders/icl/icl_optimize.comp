// The ICL optimizer step; the kernel is in icl_optimize.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_optimize.glsl"
