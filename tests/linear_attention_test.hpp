// Shared pieces of the linear attention tests: a test case's shape and options, and the declared
// tolerance (absolute part scaled by the outputs' magnitude, since outputs are sums over the sequence).
#pragma once

#include "op_test.hpp"
#include "rill/ops/linear_attention.hpp"

namespace rill_test {

struct LinearAttentionCase {
  int64_t batch, heads, n, dk, dv;
  rill::ops::FeatureMap feature;
  bool decay;
  uint32_t chunk, per_dispatch;
};

inline void require_la_close(const std::vector<float>& got, const std::vector<float>& want, rill::DType dtype,
                             const char* what, double f32_atol = 2e-6, double f32_rtol = 2e-5, double f16_tol = 2e-3) {
  const bool f16 = dtype == rill::DType::kF16;
  require_close(got, want, (f16 ? f16_tol : f32_atol) * (1.0 + max_abs(want)), f16 ? f16_tol : f32_rtol, what);
}

}  // namespace rill_test
