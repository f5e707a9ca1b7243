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

void linear_attention_backward(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                               const std::vector<float>& d_o, const std::vector<float>& decay,
                               const LinearAttentionShape& s, FeatureMap f, bool causal, std::vector<float>& dq,
                               std::vector<float>& dk, std::vector<float>& dv) {
  dq.assign(q.size(), 0.0f);
  dk.assign(k.size(), 0.0f);
  dv.assign(v.size(), 0.0f);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const double lambda = decay.empty() ? 1.0 : decay[size_t(bh % s.heads)];
    const size_t qk = size_t(bh * s.n * s.dk), vo = size_t(bh * s.n * s.dv);
    auto fq = [&](int64_t t, int64_t i) { return feature(f, q[qk + size_t(t * s.dk + i)]); };
    auto fk = [&](int64_t t, int64_t i) { return feature(f, k[qk + size_t(t * s.dk + i)]); };
    for (int64_t t = 0; t < s.n; ++t) {
      for (int64_t u = 0; u <= (causal ? t : s.n - 1); ++u) {
        const double w = causal ? std::pow(lambda, double(t - u)) : 1.0;
        double do_v = 0.0, q_k = 0.0;  // do_t . v_u and phi(q_t) . phi(k_u)
        for (int64_t j = 0; j < s.dv; ++j) do_v += double(d_o[vo + size_t(t * s.dv + j)]) * v[vo + size_t(u * s.dv + j)];
        for (int64_t i = 0; i < s.dk; ++i) q_k += fq(t, i) * fk(u, i);
        for (int64_t i = 0; i < s.dk; ++i) {
          dq[qk + size_t(t * s.dk + i)] += float(w * do_v * fk(u, i) * feature_grad(f, q[qk + size_t(t * s.dk + i)]));
          dk[qk + size_t(u * s.dk + i)] += float(w * do_v * fq(t, i) * feature_grad(f, k[qk + size_t(u * s.dk + i)]));
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
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const double lambda = decay.empty() ? 1.0 : decay[size_t(bh % s.heads)];
    const float* qb = &q[size_t(bh * s.n * s.dk)];
    const float* kb = &k[size_t(bh * s.n * s.dk)];
    const float* vb = &v[size_t(bh * s.n * s.dv)];
    const float* s0 = state_in.empty() ? nullptr : &state_in[size_t(bh * s.dk * s.dv)];
    // Direct sums, quadratic in N: the definition, not the algorithm.
    for (int64_t t = 0; t < s.n; ++t) {
      for (int64_t j = 0; j < s.dv; ++j) {
        double acc = 0.0;
        const int64_t last = causal ? t : s.n - 1;
        for (int64_t u = 0; u <= last; ++u) {
          double dot = 0.0;
          for (int64_t i = 0; i < s.dk; ++i) dot += feature(f, qb[t * s.dk + i]) * feature(f, kb[u * s.dk + i]);
          acc += (causal ? std::pow(lambda, double(t - u)) : 1.0) * dot * vb[u * s.dv + j];
        }
        if (s0) {  // the initial state as if it were positions before 0
          double inter = 0.0;
          for (int64_t i = 0; i < s.dk; ++i) inter += feature(f, qb[t * s.dk + i]) * s0[i * s.dv + j];
          acc += (causal ? std::pow(lambda, double(t + 1)) : 1.0) * inter;
        }
        o[size_t((bh * s.n + t) * s.dv + j)] = float(acc);
      }
    }
    for (int64_t i = 0; i < s.dk; ++i) {
      for (int64_t j = 0; j < s.dv; ++j) {
        double acc = s0 ? std::pow(lambda, double(s.n)) * s0[i * s.dv + j] : 0.0;
        for (int64_t u = 0; u < s.n; ++u)
          acc += std::pow(lambda, double(s.n - 1 - u)) * feature(f, kb[u * s.dk + i]) * vb[u * s.dv + j];
        state_out[size_t((bh * s.dk + i) * s.dv + j)] = float(acc);
      }
    }
  }
}

}  // namespace rill::ref
