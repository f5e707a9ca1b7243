// Reading a packed weight matrix (rill/ops/packed_weights.hpp), the one GLSL definition of its
// layout: with B_INT8 or B_F16 defined, the includer gets the buffers pw_words (binding
// PW_WORDS_BINDING) and pw_scales (PW_SCALES_BINDING, int8 only) and packed_value().
#ifndef RILL_PACKED_WEIGHTS_GLSL
#define RILL_PACKED_WEIGHTS_GLSL
#include "contract/matmul.glsl"  // values per word
#include "half_bits.glsl"

layout(std430, binding = PW_WORDS_BINDING) readonly buffer PackedWords { uint pw_words[]; };
layout(std430, binding = PW_SCALES_BINDING) readonly buffer PackedScales { float pw_scales[]; };

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
