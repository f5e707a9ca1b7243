// Reading a packed weight matrix (rill/ops/packed_weights.hpp), the one GLSL definition of its
// layout: with B_INT8, B_INT4 or B_F16 defined, the includer gets the buffers pw_words (binding
// PW_WORDS_BINDING) and pw_scales (PW_SCALES_BINDING, int8 and int4 only) and packed_value().
#ifndef RILL_PACKED_WEIGHTS_GLSL
#define RILL_PACKED_WEIGHTS_GLSL
#include "packed_forms.glsl"
#include "half_bits.glsl"

layout(std430, binding = PW_WORDS_BINDING) readonly buffer PackedWords { uint pw_words[]; };
layout(std430, binding = PW_SCALES_BINDING) readonly buffer PackedScales { float pw_scales[]; };

// Element (r, c) of a matrix whose words start at word_base (words_per_row per row) and int8 scales
// at scale_base (one per group of `group` rows and column, `cols` per scale row).
float packed_value(uint word_base, uint words_per_row, uint scale_base, uint group, uint cols, uint r, uint c) {
#if defined(B_SCALED)
  const uint word = pw_words[word_base + r * words_per_row + c / PACKED_PER_WORD];
  const float q = float(bitfieldExtract(int(word), int((c % PACKED_PER_WORD) * PACKED_BITS), int(PACKED_BITS)));
  return q * pw_scales[scale_base + (r / group) * cols + c];
#else
  const vec2 pair = rill_unpack_half2(pw_words[word_base + r * words_per_row + c / kPackedF16PerWord]);
  return c % kPackedF16PerWord == 0u ? pair.x : pair.y;
#endif
}

#endif  // RILL_PACKED_WEIGHTS_GLSL
