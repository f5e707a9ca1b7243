// Shared GLSL for rill kernels. Storage type and arithmetic type are separate so that f16 storage
// with f32 accumulation is one define (RILL_STORAGE_F16) in the kernel that wants it.
#ifndef RILL_COMMON_GLSL
#define RILL_COMMON_GLSL

#ifdef RILL_STORAGE_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define sfloat float16_t
#define svec4 f16vec4
#else
#define sfloat float
#define svec4 vec4
#endif
#define afloat float

// An f32 value stored as f16: Vulkan leaves a narrowing conversion's rounding to the device, and
// rounding toward zero turns a value past f16's range into 65504 rather than Inf (the likely cause
// of an overflow NVIDIA's driver let pass in a fused decoding step): a finite, wrong value. Every f16
// store goes through to_sfloat / to_svec4, which overflow as rounding to nearest does on every
// device: from 65520 on +-Inf (NaN stays NaN), so the checks downstream (finite logits) see it.
// The range check stays in f32 and the conversion at the store, so a kernel needs 16-bit storage
// only, not 16-bit arithmetic (a function of f16 type would make glslang declare Float16).
#ifdef RILL_STORAGE_F16
float rill_infinity() { return uintBitsToFloat(0x7f800000u); }
float rill_f16_range(float v) { return abs(v) < 65520.0 ? v : v * rill_infinity(); }
vec4 rill_f16_range(vec4 v) { return mix(v * rill_infinity(), v, lessThan(abs(v), vec4(65520.0))); }
#define to_sfloat(v) float16_t(rill_f16_range(float(v)))
#define to_svec4(v) f16vec4(rill_f16_range(vec4(v)))
#else
#define to_sfloat(v) float(v)
#define to_svec4(v) vec4(v)
#endif

// The value v reads back as once stored (f16: rounded to nearest even, +-Inf from 65520 on), for a
// kernel that goes on computing with what it stores. Not float(to_sfloat(v)): NVIDIA's compiler
// dropped that round trip (a fused residual RMSNorm normalised the unrounded sum), so the rounding
// is arithmetic no compiler may fold: a scale by a power of two (exact), roundEven, and back.
#ifdef RILL_STORAGE_F16
float rill_storage_round(float v) {
  v = rill_f16_range(v);
  // f16's spacing around v: 2^(e - 10) for e = v's binary exponent, fixed at 2^-24 below 2^-14.
  const int e = max(int(bitfieldExtract(floatBitsToUint(v), 23, 8)) - 127, -14);
  return abs(v) < 65520.0 ? ldexp(roundEven(ldexp(v, 10 - e)), e - 10) : v;
}
vec4 rill_storage_round(vec4 v) {
  v = rill_f16_range(v);
  const ivec4 e = max(ivec4(bitfieldExtract(floatBitsToUint(v), 23, 8)) - 127, ivec4(-14));
  return mix(v, ldexp(roundEven(ldexp(v, 10 - e)), e - 10), lessThan(abs(v), vec4(65520.0)));
}
#else
float rill_storage_round(float v) { return v; }
vec4 rill_storage_round(vec4 v) { return v; }
#endif

// The type a kernel writes its output in: the storage type, or f32 with RILL_OUTPUT_F32 (an f16
// kernel whose output outgrows f16: linear attention's sums over every earlier position).
#ifdef RILL_OUTPUT_F32
#define ofloat float
#define ovec4 vec4
#define to_ofloat(v) float(v)
#define to_ovec4(v) vec4(v)
#else
#define ofloat sfloat
#define ovec4 svec4
#define to_ofloat to_sfloat
#define to_ovec4 to_svec4
#endif

// Flat index of this invocation over a 1-D or 2-D grid of workgroups (x fastest). Kernels that
// cover more than 65535 groups in x spread them over y.
uint rill_global_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * gl_WorkGroupSize.x);
}

#endif  // RILL_COMMON_GLSL
