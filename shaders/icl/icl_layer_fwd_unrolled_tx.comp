// Loops unrolled (icl_layer_fwd_unrolled.comp says when); the layer's input tokens read as texels
// (icl_layer_fwd.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL [[unroll]]
#define RILL_ICL_TEXELS
#include "icl_layer_fwd.glsl"
