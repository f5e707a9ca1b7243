// IEEE 754 binary16 and bfloat16 conversion for f16 and bf16 tensors (round to nearest even; NaN
// and Inf kept).
#pragma once

#include <cstdint>

#include "rill/export.hpp"

namespace rill {

RILL_API uint16_t float_to_half(float value);
RILL_API float half_to_float(uint16_t bits);

// bfloat16 is the top half of a binary32: the same range, 8 bits of precision.
RILL_API uint16_t float_to_bf16(float value);
RILL_API float bf16_to_float(uint16_t bits);

}  // namespace rill
