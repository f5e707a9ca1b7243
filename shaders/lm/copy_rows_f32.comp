// copy_rows, f32 storage; the kernel is in copy_rows.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "copy_rows.glsl"
