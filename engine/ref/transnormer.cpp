#include "transnormer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "elementwise.hpp"
#include "linear_attention.hpp"

namespace rill::ref {

namespace {

using lm::LayerKind;
using lm::ModelConfig;
using lm::NormKind;
using Mat = std::vector<double>;  // activations, row-major [rows, cols]

std::vector<float> fetch(const TransNormerWeightFn& weight, const std::string& name, size_t elements) {
  std::vector<float> w = weight(name);
  if (w.size() != elements)
    throw std::invalid_argument("transnormer reference: weight '" + name + "' has " + std::to_string(w.size()) +
                                " elements, expected " + std::to_string(elements));
  return w;
}

// y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * gain; x [n, d]; empty gain: none (SRMSNorm).
Mat norm(const Mat& x, size_t n, size_t d, const std::vector<float>& gain, double eps) {
  Mat y(n * d);
  for (size_t t = 0; t < n; ++t) {
    double ss = 0.0;
    for (size_t i = 0; i < d; ++i) ss += x[t * d + i] * x[t * d + i];
    const double rstd = 1.0 / std::sqrt(ss / double(d) + eps);
    for (size_t i = 0; i < d; ++i) y[t * d + i] = x[t * d + i] * rstd * (gain.empty() ? 1.0 : double(gain[i]));
  }
  return y;
}

// The gain of a norm: the weight `name` for RMSNorm, none for SRMSNorm.
std::vector<float> gain(const ModelConfig& c, const TransNormerWeightFn& weight, const std::string& name) {
  if (c.norm != NormKind::kRmsNorm) return {};
  return fetch(weight, name, c.width);
}

// y [n, out] = x [n, in] w [in, out]; y is written at column offset `col` of rows `y_cols` wide.
void matmul(const Mat& x, size_t n, size_t in, const float* w, size_t out, Mat& y, size_t y_cols, size_t col) {
  std::vector<double> row(out);
  for (size_t t = 0; t < n; ++t) {
    std::fill(row.begin(), row.end(), 0.0);
    for (size_t i = 0; i < in; ++i) {
      const double xi = x[t * in + i];
      const float* wi = w + i * out;
      for (size_t j = 0; j < out; ++j) row[j] += xi * double(wi[j]);
    }
    std::copy(row.begin(), row.end(), y.begin() + std::ptrdiff_t(t * y_cols + col));
  }
}

Mat matmul(const Mat& x, size_t n, size_t in, const std::vector<float>& w, size_t out) {
  Mat y(n * out);
  matmul(x, n, in, w.data(), out, y, out, 0);
  return y;
}

// Per-head projection: y[t, h*Dh + j] = sum_i u[t, i] w[h, i, j]; w [H, D, Dh], y [n, D].
Mat project_heads(const Mat& u, size_t n, const ModelConfig& c, const std::vector<float>& w) {
  const size_t D = c.width, H = c.heads, Dh = c.head_dim();
  Mat y(n * D);
  for (size_t h = 0; h < H; ++h) matmul(u, n, D, w.data() + h * D * Dh, Dh, y, D, h * Dh);
  return y;
}

// Softmax attention inside aligned blocks: position t sees [t - t % block, t].
// block = n: full causal softmax attention (LayerKind::kSoftmax).
Mat diag_attention(const Mat& q, const Mat& k, const Mat& v, size_t n, const ModelConfig& c, size_t block) {
  const size_t D = c.width, H = c.heads, Dh = c.head_dim();
  const double scale = 1.0 / std::sqrt(double(Dh));
  Mat o(n * D, 0.0);
  std::vector<double> p(block);
  for (size_t h = 0; h < H; ++h) {
    for (size_t t = 0; t < n; ++t) {
      const size_t start = t - t % block;
      double max_score = -INFINITY;
      for (size_t s = start; s <= t; ++s) {
        double dot = 0.0;
        for (size_t j = 0; j < Dh; ++j) dot += q[t * D + h * Dh + j] * k[s * D + h * Dh + j];
        p[s - start] = dot * scale;
        max_score = std::max(max_score, p[s - start]);
      }
      double sum = 0.0;
      for (size_t s = start; s <= t; ++s) sum += p[s - start] = std::exp(p[s - start] - max_score);
      for (size_t s = start; s <= t; ++s)
        for (size_t j = 0; j < Dh; ++j) o[t * D + h * Dh + j] += p[s - start] / sum * v[s * D + h * Dh + j];
    }
  }
  return o;
}

// o_t = sum_{s<=t} lambda^(t-s) (phi(q_t) . phi(k_s)) v_s as the recurrence
// S_t = lambda S_{t-1} + phi(k_t)^T v_t, o_t = phi(q_t) S_t, per head (S is Dh x Dh).
Mat norm_attention(const Mat& q, const Mat& k, const Mat& v, size_t n, const ModelConfig& c) {
  const size_t D = c.width, H = c.heads, Dh = c.head_dim();
  const auto phi = [&](double x) { return feature(static_cast<FeatureMap>(int(c.feature_map)), x); };
  Mat o(n * D, 0.0);
  std::vector<double> state(Dh * Dh), fq(Dh);
  for (size_t h = 0; h < H; ++h) {
    const double lambda = c.decay.empty() ? 1.0 : double(c.decay[h]);
    std::fill(state.begin(), state.end(), 0.0);
    for (size_t t = 0; t < n; ++t) {
      const size_t row = t * D + h * Dh;
      for (size_t i = 0; i < Dh; ++i) {
        const double fk = phi(k[row + i]);
        for (size_t j = 0; j < Dh; ++j) state[i * Dh + j] = lambda * state[i * Dh + j] + fk * v[row + j];
      }
      for (size_t i = 0; i < Dh; ++i) fq[i] = phi(q[row + i]);
      for (size_t j = 0; j < Dh; ++j) {
        double acc = 0.0;
        for (size_t i = 0; i < Dh; ++i) acc += fq[i] * state[i * Dh + j];
        o[row + j] = acc;
      }
    }
  }
  return o;
}

}  // namespace

std::vector<float> transnormer_logits(const ModelConfig& c, const TransNormerWeightFn& weight,
                                      std::span<const uint32_t> tokens) {
  const size_t N = tokens.size(), V = c.vocab, D = c.width, H = c.heads, Dh = c.head_dim(), F = c.ffn_width;
  const double eps = c.norm_eps;
  std::vector<LayerKind> kinds = c.layer_kinds;
  if (kinds.empty()) {  // the default split, as ModelConfig::validate() fills it in
    kinds.assign(c.layers, LayerKind::kNorm);
    for (uint32_t i = 0; i < c.layers / 2; ++i) kinds[i] = LayerKind::kDiag;
  }

  const std::vector<float> embed = fetch(weight, "embed", V * D);
  Mat x(N * D, 0.0);
  for (size_t t = 0; t < N; ++t)
    if (tokens[t] < V)
      for (size_t i = 0; i < D; ++i) x[t * D + i] = embed[tokens[t] * D + i];

  for (uint32_t layer = 0; layer < c.layers; ++layer) {
    const std::string p = "layers." + std::to_string(layer) + ".";
    // Token mixer: x += Mixer(Norm(x)) Wo.
    const Mat u = norm(x, N, D, gain(c, weight, p + "attn_norm"), eps);
    const Mat q = project_heads(u, N, c, fetch(weight, p + "wq", H * D * Dh));
    const Mat k = project_heads(u, N, c, fetch(weight, p + "wk", H * D * Dh));
    const Mat v = project_heads(u, N, c, fetch(weight, p + "wv", H * D * Dh));
    Mat o;
    if (kinds[layer] == LayerKind::kDiag) {
      o = diag_attention(q, k, v, N, c, c.block);
    } else if (kinds[layer] == LayerKind::kSoftmax) {
      o = diag_attention(q, k, v, N, c, std::max<size_t>(N, 1));
    } else {
      o = norm(norm_attention(q, k, v, N, c), N, D, gain(c, weight, p + "out_norm"), eps);
    }
    const Mat mixed = matmul(o, N, D, fetch(weight, p + "wo", D * D), D);
    for (size_t e = 0; e < N * D; ++e) x[e] += mixed[e];

    // Channel mixer: x += (g Wu * act(g Wg)) Wd with g = Norm(x).
    const Mat g = norm(x, N, D, gain(c, weight, p + "ffn_norm"), eps);
    const Mat a = matmul(g, N, D, fetch(weight, p + "wu", D * F), F);
    Mat b = matmul(g, N, D, fetch(weight, p + "wg", D * F), F);
    for (size_t e = 0; e < N * F; ++e) b[e] = a[e] * activation(int(c.glu_activation), b[e]);
    const Mat down = matmul(b, N, F, fetch(weight, p + "wd", F * D), D);
    for (size_t e = 0; e < N * D; ++e) x[e] += down[e];
  }

  const Mat xn = norm(x, N, D, gain(c, weight, "final_norm"), eps);
  std::vector<float> logits(N * V);
  if (c.tie_embeddings) {  // logits[t, v] = xn[t, :] . embed[v, :]
    for (size_t t = 0; t < N; ++t)
      for (size_t vi = 0; vi < V; ++vi) {
        double acc = 0.0;
        for (size_t i = 0; i < D; ++i) acc += xn[t * D + i] * double(embed[vi * D + i]);
        logits[t * V + vi] = float(acc);
      }
  } else {
    const Mat y = matmul(xn, N, D, fetch(weight, "head", D * V), V);
    for (size_t e = 0; e < N * V; ++e) logits[e] = float(y[e]);
  }
  return logits;
}

}  // namespace rill::ref
