// la_scan_cpu_vec4, f16 inputs and an f32 output (CPU drivers, 4 elements per load); the kernel is in la_scan_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#define RILL_OUTPUT_F32
#define RILL_VECTOR_ROWS
#include "la_scan_cpu.glsl"
