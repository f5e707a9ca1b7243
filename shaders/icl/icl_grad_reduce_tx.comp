// The ICL gradient reduction reading the partials as texels (CPU drivers); the kernel is in
// icl_grad_reduce.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_ICL_TEXELS
#include "icl_grad_reduce.glsl"
