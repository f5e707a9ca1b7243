// Loops rolled: compiles in about a second for any shape.
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL [[dont_unroll]]
#include "icl_layer_fwd.glsl"
