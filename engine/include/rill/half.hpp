// IEEE 754 binary16 conversion for f16 tensors (round to nearest even; NaN and Inf kept).
#pragma once

#include <cstdint>

#include "rill/export.hpp"

namespace rill {

RILL_API uint16_t float_to_half(float value);
RILL_API float half_to_float(uint16_t bits);

}  // namespace rill
