// softmax xent fwd, f32 storage; the kernel is in softmax_xent_fwd.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "softmax_xent_fwd.glsl"
