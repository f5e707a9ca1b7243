// softmax xent bwd, f16 storage; the kernel is in softmax_xent_bwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "softmax_xent_bwd.glsl"
