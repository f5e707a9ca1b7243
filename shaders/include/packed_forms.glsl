// Which packed form a kernel compiled with B_INT8, B_INT4 or B_F16 reads (rill/ops/packed_weights.hpp):
// B_SCALED for the forms with group scales (int8, int4), B_PACKED for any of them; PACKED_PER_WORD
// values per 32-bit word and PACKED_BITS bits per value.
#ifndef RILL_PACKED_FORMS_GLSL
#define RILL_PACKED_FORMS_GLSL
#include "contract/matmul.glsl"
#if defined(B_INT8) || defined(B_INT4)
#define B_SCALED
#endif
#if defined(B_SCALED) || defined(B_F16)
#define B_PACKED
#endif
#if defined(B_INT4)
#define PACKED_PER_WORD kPackedInt4PerWord
#elif defined(B_INT8)
#define PACKED_PER_WORD kPackedInt8PerWord
#else
#define PACKED_PER_WORD kPackedF16PerWord
#endif
#define PACKED_BITS (32u / PACKED_PER_WORD)
#endif  // RILL_PACKED_FORMS_GLSL
