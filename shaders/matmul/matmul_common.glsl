// Shared interface of the matmul kernels: C[b] = op(A[b]) op(B[b]) (+ bias) (+ C[b] if ACCUMULATE).
// Element (m, k) of A is a[a_off + m * a_rs + k * a_cs]: strides express transposes, and a batch
// stride of 0 broadcasts one matrix over the batch. Same for B (k, n). C is [batch, M, N] row-major.
// A, B, C, bias: sfloat storage; accumulation in f32. With B_INT8, B_INT4 or B_F16, B is a packed
// weight matrix (rill/ops/packed_weights.hpp): u32 words, b_rs words per row, b_bs words per
// matrix, and for int8 and int4 f32 scales per (group of b_group rows, column), s_bs per matrix.
#include "rill_common.glsl"
#include "packed_forms.glsl"

// Specialized, not push-constant flags: with flags, lavapipe compiled the CPU kernels' unrolled
// epilogue with a bias and a C load per accumulator, 1.8x slower (.ci/timing/matmul-epilogue-specialized.txt).
layout(constant_id = 2) const bool HAS_BIAS = false;
layout(constant_id = 3) const bool ACCUMULATE = false;

#if defined(RILL_MATMUL_VEC8)
// A and B read as 8 f16 values per load (matmul_coop.glsl: rows contiguous, K and N multiples of 8).
layout(std430, binding = 0) readonly buffer A { uvec4 a8[]; };
layout(std430, binding = 1) readonly buffer B { uvec4 b8[]; };
#elif defined(RILL_MATMUL_TEXEL)
// A and B read as texels of 4 adjacent elements along their rows (matmul_register.glsl's texel form);
// a packed B as texels of 4 words, and int8's scales as texels of 4 columns.
layout(binding = 0) uniform samplerBuffer a4;
#if defined(B_PACKED)
layout(binding = 1) uniform usamplerBuffer bw4;
#ifdef B_SCALED
layout(binding = 4) uniform samplerBuffer scales4;
#else
layout(std430, binding = 4) readonly buffer Unused { uint unused_words[]; };  // the words again: no scales
#endif
#else
layout(binding = 1) uniform samplerBuffer b4;
#endif
#else
layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
#endif
#if defined(RILL_MATMUL_VEC8) || defined(RILL_MATMUL_TEXEL)
#elif defined(B_PACKED)
#define PW_WORDS_BINDING 1
#define PW_SCALES_BINDING 4
#include "packed_weights.glsl"
#else
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
#endif
#include "contract/matmul.glsl"
layout(push_constant) uniform PushBlock { MatmulPush p; };
#define MATMUL_BIAS_BINDING 2
#define MATMUL_C_BINDING 3
#include "matmul_epilogue.glsl"

#if !defined(RILL_MATMUL_VEC8) && !defined(RILL_MATMUL_TEXEL)
afloat load_a(uint base, uint m, uint k) { return afloat(a[base + m * p.a_rs + k * p.a_cs]); }
afloat load_b(uint batch, uint k, uint n) {
#if defined(B_PACKED)
  return afloat(packed_value(batch * p.b_bs, p.b_rs, batch * p.s_bs, p.b_group, p.N, k, n));
#else
  return afloat(b[batch * p.b_bs + k * p.b_rs + n * p.b_cs]);
#endif
}
#endif
