// Loops rolled: compiles in about a second for any shape; reads its input tokens as texels
// (icl_layer_fwd.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL [[dont_unroll]]
#define RILL_ICL_TEXELS
#include "icl_layer_fwd.glsl"
