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

// o_t = sum_{s<=t} lambda_h^(t-s) (q_t . k_s) v_s as the recurrence S_t = lambda S_{t-1} + k_t^T v_t,
// o_t = q_t S_t, per head (S is dk x dv); q, k [n, H * dk] with the feature map already applied,
// v [n, H * dv]. modeling_transnormer.py computes the same sum block-wise (prefill) and as this
// recurrence (decode): no 1/sqrt(d) scale, no denominator.
Mat norm_attention(const Mat& q, const Mat& k, const Mat& v, size_t n, size_t H, size_t dk, size_t dv,
                   std::span<const float> decay) {
  Mat o(n * H * dv, 0.0);
  std::vector<double> state(dk * dv);
  for (size_t h = 0; h < H; ++h) {
    const double lambda = decay.empty() ? 1.0 : double(decay[h]);
    std::fill(state.begin(), state.end(), 0.0);
    for (size_t t = 0; t < n; ++t) {
      const size_t qk = (t * H + h) * dk, vo = (t * H + h) * dv;
      for (size_t i = 0; i < dk; ++i)
        for (size_t j = 0; j < dv; ++j) state[i * dv + j] = lambda * state[i * dv + j] + k[qk + i] * v[vo + j];
      for (size_t j = 0; j < dv; ++j) {
        double acc = 0.0;
        for (size_t i = 0; i < dk; ++i) acc += q[qk + i] * state[i * dv + j];
        o[vo + j] = acc;
      }
    }
  }
  return o;
}

Mat apply_feature(Mat x, FeatureMap f) {
  for (double& e : x) e = feature(f, e);
  return x;
}

// LRPE (modeling_transnormer.py, class Lrpe): per head, x [Dh] at absolute position p becomes
// [x cos(theta p), x sin(theta p)] (2 Dh features), theta [H, Dh] learned. x [n, H * Dh] ->
// [n, H * 2 Dh]. The published code forms the angle in the model's dtype; here it is exact.
Mat lrpe(const Mat& x, size_t n, size_t H, size_t Dh, const std::vector<float>& theta) {
  Mat y(n * H * 2 * Dh);
  for (size_t t = 0; t < n; ++t)
    for (size_t h = 0; h < H; ++h)
      for (size_t j = 0; j < Dh; ++j) {
        const double angle = double(theta[h * Dh + j]) * double(t), value = x[(t * H + h) * Dh + j];
        y[(t * H + h) * 2 * Dh + j] = value * std::cos(angle);
        y[(t * H + h) * 2 * Dh + Dh + j] = value * std::sin(angle);
      }
  return y;
}

}  // namespace

std::vector<float> transnormer_logits(const ModelConfig& c, const TransNormerWeightFn& weight,
                                      std::span<const uint32_t> tokens, TransNormerTrace* trace) {
  const size_t N = tokens.size(), V = c.vocab, D = c.width, H = c.heads, Dh = c.head_dim(), F = c.ffn_width;
  const double eps = c.norm_eps;
  std::vector<LayerKind> kinds = c.layer_kinds;
  if (kinds.empty()) {  // the default split, as ModelConfig::validate() fills it in
    kinds.assign(c.layers, LayerKind::kNorm);
    for (uint32_t i = 0; i < c.layers / 2; ++i) kinds[i] = LayerKind::kDiag;
  }

  // TransnormerModel.forward: the embedding times embed_scale (sqrt(D) unless no_scale_embedding).
  const std::vector<float> embed = fetch(weight, "embed", V * D);
  Mat x(N * D, 0.0);
  for (size_t t = 0; t < N; ++t)
    if (tokens[t] < V)
      for (size_t i = 0; i < D; ++i) x[t * D + i] = double(embed[tokens[t] * D + i]) * double(c.embed_scale);

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
      // NormLinearAttention: phi on q and k (linear_act_fun), LRPE on both in the listed layers,
      // linear attention with the layer's decay, then a norm over all heads together.
      const FeatureMap f = static_cast<FeatureMap>(int(c.feature_map));
      Mat fq = apply_feature(q, f), fk = apply_feature(k, f);
      size_t dk = Dh;
      if (c.has_lrpe(layer)) {
        const std::vector<float> theta = fetch(weight, p + "lrpe_theta", H * Dh);
        fq = lrpe(fq, N, H, Dh, theta);
        fk = lrpe(fk, N, H, Dh, theta);
        dk = 2 * Dh;
      }
      const Mat attended = norm_attention(fq, fk, v, N, H, dk, Dh, c.layer_decay(layer));
      if (trace)
        for (double value : attended)
          trace->largest_norm_attention_output = std::max(trace->largest_norm_attention_output, std::fabs(value));
      o = norm(attended, N, D, gain(c, weight, p + "out_norm"), eps);
    }
    if (c.output_gate) {  // NormLinearAttention: output = u * norm(output), u from the same input
      const Mat gate = matmul(u, N, D, fetch(weight, p + "wgate", D * D), D);
      for (size_t e = 0; e < N * D; ++e) o[e] *= gate[e];
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
