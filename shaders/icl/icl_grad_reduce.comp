// The ICL gradient reduction; the kernel is in icl_grad_reduce.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_grad_reduce.glsl"
