// The ICL optimizer step without subgroup arithmetic; the kernel is in icl_optimize.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_NO_SUBGROUP_ARITHMETIC
#include "icl_optimize.glsl"
