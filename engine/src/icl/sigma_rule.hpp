// The noise levels the ICL sampler takes: finite, and 0 or normal. A GPU that flushes denormal
// operands (NVIDIA's do) would draw other tasks than the CPU twin from a denormal sigma.
#pragma once

#include <cfloat>
#include <cmath>

namespace rill::icl::detail {

inline bool sigma_allowed(float sigma) { return std::isfinite(sigma) && (sigma == 0.0f || sigma >= FLT_MIN); }
inline constexpr const char* kSigmaRule = "finite and 0 or at least 2^-126 (not denormal)";

}  // namespace rill::icl::detail
