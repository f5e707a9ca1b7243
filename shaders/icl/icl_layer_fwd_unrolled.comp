// Loops unrolled: the private arrays become registers (faster on lavapipe), but LLVM
// needs seconds at d = 10 (icl_model.glsl); the trainer picks this one only for small models.
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL [[unroll]]
#include "icl_layer_fwd.glsl"
