// Reading a packed weight matrix (rill/ops/packed_weights.hpp), the one GLSL definition of its
// layout: with B_INT8 or B_F16 defined, the includer gets the buffers pw_words (binding
// PW_WORDS_BINDING) and pw_scales (PW_SCALES_BINDING, int8 only) and packed_value().
#ifndef RILL_PACKED_WEIGHTS_GLSL
#define RILL_PACKED_WEIGHTS_GLSL
#include "contract/matmul.glsl"  // values per word

layout(std430, binding = PW_WORDS_BINDING) readonly buffer PackedWords { uint pw_words[]; };
layout(std430, binding = PW_SCALES_BINDING) readonly buffer PackedScales { float pw_scales[]; };

// f16 bits to f32, exactly as unpackHalf2x16 but in integer arithmetic: LLVM 15's AArch64 back end
// aborts on the vector form of unpackHalf2x16 (lavapipe on arm64; vk/quirks.cpp), and these kernels
// wait on memory, not on the few integer operations.
float rill_half_bits_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16u;
  const uint e = (h >> 10u) & 0x1fu;
  const uint m = h & 0x3ffu;
  const float subnormal = float(m) * (1.0 / 16777216.0);  // m * 2^-24, exact; zero when m is
  const uint bits = e == 31u ? (0x7f800000u | (m << 13u)) : (((e + 112u) << 23u) | (m << 13u));
  return e == 0u ? (sign != 0u ? -subnormal : subnormal) : uintBitsToFloat(sign | bits);
}

vec2 rill_unpack_half2(uint word) {
  return vec2(rill_half_bits_to_float(word & 0xffffu), rill_half_bits_to_float(word >> 16u));
}

// Element (r, c) of a matrix whose words start at word_base (words_per_row per row) and int8 scales
// at scale_base (one per group of `group` rows and column, `cols` per scale row).
float packed_value(uint word_base, uint words_per_row, uint scale_base, uint group, uint cols, uint r, uint c) {
#if defined(B_INT8)
  const uint word = pw_words[word_base + r * words_per_row + c / kPackedInt8PerWord];
  const float q = float(bitfieldExtract(int(word), int((c % kPackedInt8PerWord) * 8u), 8));
  return q * pw_scales[scale_base + (r / group) * cols + c];
#else
  const vec2 pair = rill_unpack_half2(pw_words[word_base + r * words_per_row + c / kPackedF16PerWord]);
  return c % kPackedF16PerWord == 0u ? pair.x : pair.y;
#endif
}

#endif  // RILL_PACKED_WEIGHTS_GLSL
