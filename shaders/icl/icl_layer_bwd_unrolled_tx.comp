// Loops unrolled (icl_layer_bwd_unrolled.comp says when); reads as texels (icl_layer_bwd.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL [[unroll]]
#define RILL_ICL_TEXELS
#include "icl_layer_bwd.glsl"
