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

// The type a kernel writes its output in: the storage type, or f32 with RILL_OUTPUT_F32 (an f16
// kernel whose output outgrows f16: linear attention's sums over every earlier position).
#ifdef RILL_OUTPUT_F32
#define ofloat float
#define ovec4 vec4
#else
#define ofloat sfloat
#define ovec4 svec4
#endif

// Flat index of this invocation over a 1-D or 2-D grid of workgroups (x fastest). Kernels that
// cover more than 65535 groups in x spread them over y.
uint rill_global_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * gl_WorkGroupSize.x);
}

#endif  // RILL_COMMON_GLSL
