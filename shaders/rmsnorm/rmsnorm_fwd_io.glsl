// The interface both RMSNorm forward kernels share (rmsnorm_fwd.glsl and the CPU-driver
// rmsnorm_fwd_register.glsl). With RESIDUAL the input is h = x + residual (rounded to storage), and h
// is written too. Rows are read in units of row_store (vector_rows.glsl); with RILL_TEXEL_ROWS,
// x, residual and gain as 4-element texels.
#include "vector_rows.glsl"
#ifdef RILL_TEXEL_ROWS
layout(binding = 0) uniform samplerBuffer x;
#else
layout(std430, binding = 0) readonly buffer X { row_store x[]; };
#endif
#ifdef RESIDUAL
#ifdef RILL_TEXEL_ROWS
layout(binding = 1) uniform samplerBuffer residual;
layout(binding = 2) uniform samplerBuffer gain;
#else
layout(std430, binding = 1) readonly buffer Res { row_store residual[]; };
layout(std430, binding = 2) readonly buffer Gain { row_store gain[]; };
#endif
layout(std430, binding = 3) writeonly buffer H { row_store h[]; };
layout(std430, binding = 4) writeonly buffer Y { row_store y[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd[]; };
#else
#ifdef RILL_TEXEL_ROWS
layout(binding = 1) uniform samplerBuffer gain;
#else
layout(std430, binding = 1) readonly buffer Gain { row_store gain[]; };
#endif
layout(std430, binding = 2) writeonly buffer Y { row_store y[]; };
layout(std430, binding = 3) writeonly buffer Rstd { float rstd[]; };
#endif
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { RmsnormForwardPush p; };

row_value load_input(uint i) {
#ifdef RESIDUAL
  return rill_storage_round(ROW_READ(x, i) + ROW_READ(residual, i));
#else
  return ROW_READ(x, i);
#endif
}

row_value load_gain(uint i) { return ROW_READ(gain, i); }
