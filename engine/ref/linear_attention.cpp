#include "linear_attention.hpp"

#include <cmath>
#include <cstddef>

namespace rill::ref {

using std::size_t;

double feature(FeatureMap f, double x) {
  switch (f) {
    case FeatureMap::kElu1: return x > 0.0 ? x + 1.0 : std::exp(x);
    case FeatureMap::kRelu: return x > 0.0 ? x : 0.0;
    case FeatureMap::kSilu: return x / (1.0 + std::exp(-x));
    case FeatureMap::kIdentity: break;
  }
  return x;
}

double feature_grad(FeatureMap f, double x) {
  switch (f) {
    case FeatureMap::kElu1: return x > 0.0 ? 1.0 : std::exp(x);
    case FeatureMap::kRelu: return x > 0.0 ? 1.0 : 0.0;
    case FeatureMap::kSilu: {
      const double sg = 1.0 / (1.0 + std::exp(-x));
      return sg * (1.0 + x * (1.0 - sg));
    }
    case FeatureMap::kIdentity: break;
  }
  return 1.0;
}

namespace {

// phi(x) (grad: phi'(x)) of one head's [N, D] rows, evaluated once: the direct sums below reuse
// each value N times, and recomputing the exponentials made the reference the slowest part of
// the kernel tests.
std::vector<double> mapped(const float* x, int64_t count, FeatureMap f, bool grad) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) out[size_t(e)] = grad ? feature_grad(f, x[e]) : feature(f, x[e]);
  return out;
}

// lambda^d for d in [0, n]: the decay weights, each from std::pow as the sums would compute it.
std::vector<double> decay_powers(double lambda, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n + 1));
  for (int64_t d = 0; d <= n; ++d) out[size_t(d)] = std::pow(lambda, double(d));
  return out;
}

}  // namespace

void linear_attention_backward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                               const std::vector<float>& d_o, const std::vector<float>& decay,
                               const LinearAttentionShape& s, FeatureMap f, bool causal, std::vector<float>& dq,
                               std::vector<float>& dk, std::vector<float>& dv) {
  dq.assign(q.size(), 0.0f);
  dk.assign(k.size(), 0.0f);
  dv.assign(v.size(), 0.0f);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const double lambda = decay.empty() ? 1.0 : decay[size_t(bh % s.heads)];
    const std::vector<double> pw = decay_powers(lambda, s.n);
    const size_t qk = size_t(bh * s.n * s.dk), vo = size_t(bh * s.n * s.dv);
    const std::vector<double> fq = mapped(q.data() + qk, s.n * s.dk, f, false),
                              fk = mapped(k.data() + qk, s.n * s.dk, f, false);
    const std::vector<double> gq = mapped(q.data() + qk, s.n * s.dk, f, true),
                              gk = mapped(k.data() + qk, s.n * s.dk, f, true);
    for (int64_t t = 0; t < s.n; ++t) {
      for (int64_t u = 0; u <= (causal ? t : s.n - 1); ++u) {
        const double w = causal ? pw[size_t(t - u)] : 1.0;
        double do_v = 0.0, q_k = 0.0;  // do_t . v_u and phi(q_t) . phi(k_u)
        for (int64_t j = 0; j < s.dv; ++j) do_v += double(d_o[vo + size_t(t * s.dv + j)]) * v[vo + size_t(u * s.dv + j)];
        for (int64_t i = 0; i < s.dk; ++i) q_k += fq[size_t(t * s.dk + i)] * fk[size_t(u * s.dk + i)];
        for (int64_t i = 0; i < s.dk; ++i) {
          dq[qk + size_t(t * s.dk + i)] += float(w * do_v * fk[size_t(u * s.dk + i)] * gq[size_t(t * s.dk + i)]);
          dk[qk + size_t(u * s.dk + i)] += float(w * do_v * fq[size_t(t * s.dk + i)] * gk[size_t(u * s.dk + i)]);
        }
        for (int64_t j = 0; j < s.dv; ++j) dv[vo + size_t(u * s.dv + j)] += float(w * q_k * d_o[vo + size_t(t * s.dv + j)]);
      }
    }
  }
}

void linear_attention_forward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& decay, const LinearAttentionShape& s, FeatureMap f,
                              bool causal, const std::vector<float>& state_in, std::vector<float>& o,
                              std::vector<float>& state_out) {
  o.assign(size_t(s.batch * s.heads * s.n * s.dv), 0.0f);
  state_out.assign(size_t(s.batch * s.heads * s.dk * s.dv), 0.0f);
  std::vector<double> acc(size_t(s.dv));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const double lambda = decay.empty() ? 1.0 : decay[size_t(bh % s.heads)];
    const std::vector<double> pw = decay_powers(lambda, s.n);
    const std::vector<double> fq = mapped(q.data() + bh * s.n * s.dk, s.n * s.dk, f, false);
    const std::vector<double> fk = mapped(k.data() + bh * s.n * s.dk, s.n * s.dk, f, false);
    const float* vb = &v[size_t(bh * s.n * s.dv)];
    const float* s0 = state_in.empty() ? nullptr : &state_in[size_t(bh * s.dk * s.dv)];
    // Direct sums, quadratic in N: the definition, not the algorithm.
    for (int64_t t = 0; t < s.n; ++t) {
      acc.assign(size_t(s.dv), 0.0);
      const int64_t last = causal ? t : s.n - 1;
      for (int64_t u = 0; u <= last; ++u) {
        double dot = 0.0;
        for (int64_t i = 0; i < s.dk; ++i) dot += fq[size_t(t * s.dk + i)] * fk[size_t(u * s.dk + i)];
        const double weighted = (causal ? pw[size_t(t - u)] : 1.0) * dot;
        for (int64_t j = 0; j < s.dv; ++j) acc[size_t(j)] += weighted * vb[u * s.dv + j];
      }
      for (int64_t j = 0; j < s.dv; ++j) {
        if (s0) {  // the initial state as if it were positions before 0
          double inter = 0.0;
          for (int64_t i = 0; i < s.dk; ++i) inter += fq[size_t(t * s.dk + i)] * s0[i * s.dv + j];
          acc[size_t(j)] += (causal ? pw[size_t(t + 1)] : 1.0) * inter;
        }
        o[size_t((bh * s.n + t) * s.dv + j)] = float(acc[size_t(j)]);
      }
    }
    for (int64_t i = 0; i < s.dk; ++i) {
      for (int64_t j = 0; j < s.dv; ++j) {
        double sum = s0 ? pw[size_t(s.n)] * s0[i * s.dv + j] : 0.0;
        for (int64_t u = 0; u < s.n; ++u) sum += pw[size_t(s.n - 1 - u)] * fk[size_t(u * s.dk + i)] * vb[u * s.dv + j];
        state_out[size_t((bh * s.dk + i) * s.dv + j)] = float(sum);
      }
    }
  }
}

}  // namespace rill::ref
