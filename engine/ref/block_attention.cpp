#include "block_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace rill::ref {

using std::size_t;

namespace {

// Softmax probabilities of query t over keys [b0, last] of head h (max subtracted); returns
// log-sum-exp of the scaled logits.
double row_probabilities(const std::vector<float>& q, const std::vector<float>& k, int64_t h, int64_t n, int64_t dk,
                         int64_t t, int64_t b0, int64_t last, float scale, std::vector<double>& p) {
  p.clear();
  double m = -INFINITY;
  for (int64_t s = b0; s <= last; ++s) {
    double dot = 0.0;
    for (int64_t i = 0; i < dk; ++i) dot += double(q[size_t((h * n + t) * dk + i)]) * k[size_t((h * n + s) * dk + i)];
    p.push_back(dot * scale);
    m = std::max(m, p.back());
  }
  double l = 0.0;
  for (double& x : p) l += (x = std::exp(x - m));
  for (double& x : p) x /= l;
  return m + std::log(l);
}

}  // namespace

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
      lse[size_t(h * n + t)] = float(row_probabilities(q, k, h, n, dk, t, b0, last, scale, scores));
      for (int64_t j = 0; j < dv; ++j) {
        double acc = 0.0;
        for (int64_t s = b0; s <= last; ++s) acc += scores[size_t(s - b0)] * v[size_t((h * n + s) * dv + j)];
        o[size_t((h * n + t) * dv + j)] = float(acc);
      }
    }
  }
}

void block_attention_backward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& d_o, int64_t bh, int64_t n, int64_t dk, int64_t dv,
                              int64_t block, bool causal, float scale, std::vector<float>& dq,
                              std::vector<float>& dkey, std::vector<float>& dval) {
  std::vector<double> gq(q.size(), 0.0), gk(k.size(), 0.0), gv(v.size(), 0.0);
  for (int64_t h = 0; h < bh; ++h) {
    for (int64_t t = 0; t < n; ++t) {
      const int64_t b0 = t / block * block, b1 = std::min(b0 + block, n), last = causal ? t : b1 - 1;
      std::vector<double> p;
      row_probabilities(q, k, h, n, dk, t, b0, last, scale, p);
      // dP[s] = do_t . v_s; delta = sum_s P dP; dS = P (dP - delta)
      std::vector<double> dp(p.size());
      double delta = 0.0;
      for (int64_t s = b0; s <= last; ++s) {
        double x = 0.0;
        for (int64_t j = 0; j < dv; ++j) x += double(d_o[size_t((h * n + t) * dv + j)]) * v[size_t((h * n + s) * dv + j)];
        dp[size_t(s - b0)] = x;
        delta += p[size_t(s - b0)] * x;
      }
      for (int64_t s = b0; s <= last; ++s) {
        const double ps = p[size_t(s - b0)], ds = ps * (dp[size_t(s - b0)] - delta) * scale;
        for (int64_t i = 0; i < dk; ++i) {
          gq[size_t((h * n + t) * dk + i)] += ds * k[size_t((h * n + s) * dk + i)];
          gk[size_t((h * n + s) * dk + i)] += ds * q[size_t((h * n + t) * dk + i)];
        }
        for (int64_t j = 0; j < dv; ++j) gv[size_t((h * n + s) * dv + j)] += ps * d_o[size_t((h * n + t) * dv + j)];
      }
    }
  }
  dq.assign(gq.begin(), gq.end());
  dkey.assign(gk.begin(), gk.end());
  dval.assign(gv.begin(), gv.end());
}

}  // namespace rill::ref
