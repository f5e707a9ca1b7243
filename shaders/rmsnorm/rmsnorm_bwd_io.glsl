// The bindings both RMSNorm backward kernels share (rmsnorm_bwd.glsl and the CPU-driver
// rmsnorm_bwd_register.glsl): x, dy, dx [rows, dim] sfloat; gain [dim] sfloat; rstd [rows] f32. Rows
// are read in units of row_store (vector_rows.glsl).
#include "vector_rows.glsl"
layout(std430, binding = 0) readonly buffer X { row_store x[]; };
layout(std430, binding = 1) readonly buffer Gain { row_store gain[]; };
layout(std430, binding = 2) readonly buffer Rstd { float rstd[]; };
layout(std430, binding = 3) readonly buffer Dy { row_store dy[]; };
layout(std430, binding = 4) buffer Dx { row_store dx[]; };
#include "contract/norm.glsl"
