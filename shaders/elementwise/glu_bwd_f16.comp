// glu bwd, f16 storage; the kernel is in glu_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "glu_bwd.glsl"
