// kv_append, f32 storage; the kernel is in kv_append.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kv_append.glsl"
