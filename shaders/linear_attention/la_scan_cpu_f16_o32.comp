// la_scan_cpu, f16 inputs and an f32 output (CPU drivers); the kernel is in la_scan_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_OUTPUT_F32
#include "la_scan_cpu.glsl"
