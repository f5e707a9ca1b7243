// Embedding gather: out[t, :] = table[ids[t], :] * scale. An id outside the vocabulary gives a zero row
// and is counted in errors[0], which the dispatch function reports. A table larger than one binding
// is gathered in dispatches of row blocks (p.first, p.rows), each writing its ids' rows. ids: [tokens] u32;
// table: [vocab, dim] sfloat, or with B_INT8 / B_INT4 / B_F16 its transpose [dim, vocab] packed
// (packed_weights.glsl: the same matrix serves a tied output head), a block being its columns
// [first, first + rows) packed on their own; out: [tokens, dim] sfloat;
// errors: [1] u32.
#include "rill_common.glsl"
#include "packed_forms.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
#if defined(B_PACKED)
#define PW_WORDS_BINDING 1
#define PW_SCALES_BINDING 4
#include "packed_weights.glsl"
#else
layout(std430, binding = 1) readonly buffer Table { sfloat table[]; };
#endif
layout(std430, binding = 2) writeonly buffer Out { sfloat out_data[]; };
layout(std430, binding = 3) buffer Errors { uint errors[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { EmbeddingPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.tokens * p.dim) return;
  const uint t = i / p.dim, j = i % p.dim;
  const uint id = ids[t];
  if (id >= p.vocab) {  // the dispatch of the vocabulary's last rows writes and counts it
    if (p.first + p.rows < p.vocab) return;
    out_data[i] = to_sfloat(0.0);
    if (j == 0) atomicAdd(errors[0], 1u);
    return;
  }
  if (id < p.first || id - p.first >= p.rows) return;  // another dispatch's rows
#if defined(B_PACKED)
  out_data[i] = to_sfloat(packed_value(0u, p.words_per_row, 0u, p.group, p.rows, j, id - p.first) * p.scale);
#else
  out_data[i] = to_sfloat(afloat(table[(id - p.first) * p.dim + j]) * p.scale);
#endif
}
