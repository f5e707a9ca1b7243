#include "block_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace rill::ref {

using std::size_t;

void block_attention_forward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                             int64_t bh, int64_t n, int64_t dk, int64_t dv, int64_t block, bool causal, float scale,
                             std::vector<float>& o, std::vector<float>& lse) {
  o.assign(size_t(bh * n * dv), 0.0f);
  lse.assign(size_t(bh * n), 0.0f);
  std::vector<double> scores;
  for (int64_t h = 0; h < bh; ++h) {
    for (int64_t t = 0; t < n; ++t) {
      const int64_t b0 = t / block * block, b1 = std::min(b0 + block, n);
      const int64_t last = causal ? t : b1 - 1;
      scores.clear();
      double m = -INFINITY;
      for (int64_t s = b0; s <= last; ++s) {
        double dot = 0.0;
        for (int64_t i = 0; i < dk; ++i) dot += double(q[size_t((h * n + t) * dk + i)]) * k[size_t((h * n + s) * dk + i)];
        scores.push_back(dot * scale);
        m = std::max(m, scores.back());
      }
      double l = 0.0;
      for (double& x : scores) l += (x = std::exp(x - m));
      for (int64_t j = 0; j < dv; ++j) {
        double acc = 0.0;
        for (int64_t s = b0; s <= last; ++s) acc += scores[size_t(s - b0)] * v[size_t((h * n + s) * dv + j)];
        o[size_t((h * n + t) * dv + j)] = float(acc / l);
      }
      lse[size_t(h * n + t)] = float(m + std::log(l));
    }
  }
}

}  // namespace rill::ref
