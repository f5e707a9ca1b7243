// attend, f16 storage, without subgroup arithmetic; the kernel is in attend.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_NO_SUBGROUP_ARITHMETIC
#include "attend.glsl"
