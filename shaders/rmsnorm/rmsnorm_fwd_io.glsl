// The interface both RMSNorm forward kernels share (rmsnorm_fwd.glsl and the CPU-driver
// rmsnorm_fwd_cpu.glsl). With RESIDUAL the input is h = x + residual (rounded to storage), and h
// is written too.
layout(std430, binding = 0) readonly buffer X { sfloat x[]; };
#ifdef RESIDUAL
layout(std430, binding = 1) readonly buffer Res { sfloat residual[]; };
layout(std430, binding = 2) readonly buffer Gain { sfloat gain[]; };
layout(std430, binding = 3) writeonly buffer H { sfloat h[]; };
layout(std430, binding = 4) writeonly buffer Y { sfloat y[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd[]; };
#else
layout(std430, binding = 1) readonly buffer Gain { sfloat gain[]; };
layout(std430, binding = 2) writeonly buffer Y { sfloat y[]; };
layout(std430, binding = 3) writeonly buffer Rstd { float rstd[]; };
#endif
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { RmsnormForwardPush p; };

afloat load_input(uint i) {
#ifdef RESIDUAL
  return afloat(sfloat(afloat(x[i]) + afloat(residual[i])));
#else
  return afloat(x[i]);
#endif
}
