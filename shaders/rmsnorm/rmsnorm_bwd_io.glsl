// The bindings both RMSNorm backward kernels share (rmsnorm_bwd.glsl and the CPU-driver
// rmsnorm_bwd_register.glsl): x, dy, dx [rows, dim] sfloat; gain [dim] sfloat; rstd [rows] f32. Rows
// are read in units of row_store (vector_rows.glsl); with RILL_TEXEL_ROWS x, gain and dy as
// 4-element texels (dx, which ACCUMULATE reads back, stays a storage buffer).
#include "vector_rows.glsl"
#ifdef RILL_TEXEL_ROWS
layout(binding = 0) uniform samplerBuffer x;
layout(binding = 1) uniform samplerBuffer gain;
#else
layout(std430, binding = 0) readonly buffer X { row_store x[]; };
layout(std430, binding = 1) readonly buffer Gain { row_store gain[]; };
#endif
layout(std430, binding = 2) readonly buffer Rstd { float rstd[]; };
#ifdef RILL_TEXEL_ROWS
layout(binding = 3) uniform samplerBuffer dy;
#else
layout(std430, binding = 3) readonly buffer Dy { row_store dy[]; };
#endif
layout(std430, binding = 4) buffer Dx { row_store dx[]; };
#include "contract/norm.glsl"
