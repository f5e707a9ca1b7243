// The ICL gradient reduction without subgroup arithmetic; the kernel is in icl_grad_reduce.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_NO_SUBGROUP_ARITHMETIC
#include "icl_grad_reduce.glsl"
