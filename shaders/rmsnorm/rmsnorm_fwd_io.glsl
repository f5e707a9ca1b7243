// The interface both RMSNorm forward kernels share (rmsnorm_fwd.glsl and the CPU-driver
// rmsnorm_fwd_register.glsl). With RESIDUAL the input is h = x + residual (rounded to storage), and h
// is written too. Rows are read in units of row_store (vector_rows.glsl).
#include "vector_rows.glsl"
layout(std430, binding = 0) readonly buffer X { row_store x[]; };
#ifdef RESIDUAL
layout(std430, binding = 1) readonly buffer Res { row_store residual[]; };
layout(std430, binding = 2) readonly buffer Gain { row_store gain[]; };
layout(std430, binding = 3) writeonly buffer H { row_store h[]; };
layout(std430, binding = 4) writeonly buffer Y { row_store y[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd[]; };
#else
layout(std430, binding = 1) readonly buffer Gain { row_store gain[]; };
layout(std430, binding = 2) writeonly buffer Y { row_store y[]; };
layout(std430, binding = 3) writeonly buffer Rstd { float rstd[]; };
#endif
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { RmsnormForwardPush p; };

row_value load_input(uint i) {
#ifdef RESIDUAL
  return row_value(row_store(row_value(x[i]) + row_value(residual[i])));
#else
  return row_value(x[i]);
#endif
}
