// The ICL task sampler (icl_sample.glsl) declaring f32 round-to-nearest-even (SPIR-V RoundingModeRTE,
// 4462, with its capability 4467): Vulkan leaves the rounding of + - * to the driver otherwise,
// and the CPU twin rounds to nearest even. Where the device has shaderRoundingModeRTEFloat32.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 32);
#include "icl_sample.glsl"
