// The ICL task sampler (icl_sample.glsl), its f32 rounding the driver's: for devices that cannot
// declare round-to-nearest-even. Every known driver rounds so anyway; Vulkan does not require it.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_sample.glsl"
