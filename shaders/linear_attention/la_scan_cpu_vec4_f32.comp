// la_scan_cpu_vec4, f32 storage (CPU drivers, 4 elements per load); the kernel is in la_scan_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_VECTOR_ROWS
#include "la_scan_cpu.glsl"
