#include "matmul.hpp"

#include <cstddef>

namespace rill::ref {

using std::size_t;

void matmul(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& bias,
            const MatmulShape& s, bool accumulate, std::vector<float>& c) {
  if (!accumulate) c.assign(size_t(s.batch * s.m * s.n), 0.0f);
  for (int64_t bt = 0; bt < s.batch; ++bt) {
    const float* ab = &a[size_t((s.a_batched ? bt : 0) * s.m * s.k)];
    const float* bb = &b[size_t((s.b_batched ? bt : 0) * s.k * s.n)];
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < s.k; ++p) {
          const double av = s.transpose_a ? ab[p * s.m + i] : ab[i * s.k + p];
          const double bv = s.transpose_b ? bb[j * s.k + p] : bb[p * s.n + j];
          acc += av * bv;
        }
        if (!bias.empty()) acc += bias[size_t(j)];
        float& out = c[size_t((bt * s.m + i) * s.n + j)];
        out = float(accumulate ? acc + out : acc);
      }
    }
  }
}

}  // namespace rill::ref
