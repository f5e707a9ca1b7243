// la_scan_cpu, f32 storage (CPU drivers); the kernel is in la_scan_cpu.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "la_scan_cpu.glsl"
