// The bindings both RMSNorm backward kernels share (rmsnorm_bwd.glsl and the CPU-driver
// rmsnorm_bwd_cpu.glsl): x, dy, dx [rows, dim] sfloat; gain [dim] sfloat; rstd [rows] f32.
layout(std430, binding = 0) readonly buffer X { sfloat x[]; };
layout(std430, binding = 1) readonly buffer Gain { sfloat gain[]; };
layout(std430, binding = 2) readonly buffer Rstd { float rstd[]; };
layout(std430, binding = 3) readonly buffer Dy { sfloat dy[]; };
layout(std430, binding = 4) buffer Dx { sfloat dx[]; };
#include "contract/norm.glsl"
