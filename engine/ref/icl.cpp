#include "icl.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace rill::ref::icl {

using std::size_t;

namespace {

// A square k x k matrix, row-major; all the model's matrices are D1 x D1.
struct Mat {
  int k = 0;
  std::vector<double> a;
  explicit Mat(int size) : k(size), a(size_t(size) * size_t(size), 0.0) {}
  double& operator()(int r, int c) { return a[size_t(r) * size_t(k) + size_t(c)]; }
  double operator()(int r, int c) const { return a[size_t(r) * size_t(k) + size_t(c)]; }
};

Mat mul(const Mat& x, const Mat& y) {
  Mat z(x.k);
  for (int r = 0; r < x.k; ++r)
    for (int c = 0; c < x.k; ++c)
      for (int i = 0; i < x.k; ++i) z(r, c) += x(r, i) * y(i, c);
  return z;
}

Mat transpose(const Mat& x) {
  Mat z(x.k);
  for (int r = 0; r < x.k; ++r)
    for (int c = 0; c < x.k; ++c) z(r, c) = x(c, r);
  return z;
}

void add_scaled(Mat& z, double s, const Mat& x) {
  for (size_t i = 0; i < z.a.size(); ++i) z.a[i] += s * x.a[i];
}

// One task's tokens in double: e[i * D1 + k], i < T, k < D1.
using Tokens = std::vector<double>;

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}

void check_sizes(const ModelShape& m, const std::vector<double>& params, const std::vector<float>& tokens,
                 const std::vector<float>& targets) {
  require(m.d >= 1 && m.n >= 1 && m.layers >= 1 && m.heads >= 1, "icl: d, n, layers and heads must be >= 1");
  require(int64_t(params.size()) == param_count(m), "icl: params.size() != param_count");
  require(tokens.size() == targets.size() * size_t(m.n + 1) * size_t(m.d + 1), "icl: tokens.size() != tasks*T*D1");
}

// P and Q of every block (b = l*H + h) as full D1 x D1 matrices.
void block_matrices(const ModelShape& m, const std::vector<double>& params, std::vector<Mat>& ps,
                    std::vector<Mat>& qs) {
  const int d1 = m.d + 1;
  const int64_t bs = block_size(m);
  ps.assign(size_t(m.layers * m.heads), Mat(d1));
  qs.assign(size_t(m.layers * m.heads), Mat(d1));
  for (size_t b = 0; b < ps.size(); ++b) {
    const double* w = &params[b * size_t(bs)];
    if (m.param == Param::kFull) {
      std::copy(w, w + d1 * d1, ps[b].a.begin());
      std::copy(w + d1 * d1, w + 2 * d1 * d1, qs[b].a.begin());
      continue;
    }
    const double q_y = m.param == Param::kDiag ? w[3] : 0.0;  // GD++ fixes q_y = 0
    for (int k = 0; k < m.d; ++k) {
      ps[b](k, k) = w[0];
      qs[b](k, k) = w[2];
    }
    ps[b](m.d, m.d) = w[1];
    qs[b](m.d, m.d) = q_y;
  }
}

// The chain rule back from full-matrix gradients dP, dQ of every block to the parameters: a diagonal
// parameter shared by several entries gets the sum of their gradients.
void fold_gradient(const ModelShape& m, const std::vector<Mat>& dps, const std::vector<Mat>& dqs,
                   std::vector<double>& grad) {
  const int d1 = m.d + 1;
  const int64_t bs = block_size(m);
  grad.assign(size_t(param_count(m)), 0.0);
  for (size_t b = 0; b < dps.size(); ++b) {
    double* g = &grad[b * size_t(bs)];
    if (m.param == Param::kFull) {
      std::copy(dps[b].a.begin(), dps[b].a.end(), g);
      std::copy(dqs[b].a.begin(), dqs[b].a.end(), g + d1 * d1);
      continue;
    }
    for (int k = 0; k < m.d; ++k) {
      g[0] += dps[b](k, k);  // dp_x
      g[2] += dqs[b](k, k);  // dq_x
    }
    g[1] = dps[b](m.d, m.d);                               // dp_y
    if (m.param == Param::kDiag) g[3] = dqs[b](m.d, m.d);  // dq_y (GD++ has no q_y)
  }
}

Tokens task_tokens(const ModelShape& m, const std::vector<float>& tokens, size_t task) {
  const size_t count = size_t(m.n + 1) * size_t(m.d + 1);
  return Tokens(tokens.begin() + std::ptrdiff_t(task * count), tokens.begin() + std::ptrdiff_t((task + 1) * count));
}

// A = sum_{j<n} e_j e_j^T over the context tokens.
Mat context_moment(const ModelShape& m, const Tokens& e) {
  const int d1 = m.d + 1;
  Mat a(d1);
  for (int j = 0; j < m.n; ++j)
    for (int r = 0; r < d1; ++r)
      for (int c = 0; c < d1; ++c) a(r, c) += e[size_t(j * d1 + r)] * e[size_t(j * d1 + c)];
  return a;
}

// B = s * sum_h P_{l,h} A Q_{l,h}.
Mat layer_matrix(const ModelShape& m, const std::vector<Mat>& ps, const std::vector<Mat>& qs, int l, const Mat& a) {
  Mat b(a.k);
  for (int h = 0; h < m.heads; ++h) {
    const size_t blk = size_t(l * m.heads + h);
    add_scaled(b, update_scale(m), mul(mul(ps[blk], a), qs[blk]));
  }
  return b;
}

// Layer l in place: e_i <- e_i + B e_i for every token, B computed from the layer's input.
void layer_forward(const ModelShape& m, const std::vector<Mat>& ps, const std::vector<Mat>& qs, int l, Tokens& e) {
  const int d1 = m.d + 1;
  const Mat b = layer_matrix(m, ps, qs, l, context_moment(m, e));
  const Tokens in = e;
  for (int i = 0; i <= m.n; ++i)
    for (int r = 0; r < d1; ++r)
      for (int c = 0; c < d1; ++c) e[size_t(i * d1 + r)] += b(r, c) * in[size_t(i * d1 + c)];
}

// Layer l backward. e: the layer's input; g: d loss / d (layer output), replaced by d loss / d e.
// dps, dqs accumulate d loss / d P_{l,h}, d loss / d Q_{l,h}. With e_i' = (I + B) e_i:
//   dB = sum_{i<=n} g_i e_i^T                      (every token used B)
//   de_i = (I + B)^T g_i                           (direct path, every token)
//   dA = s * sum_h P_h^T dB Q_h^T                  (B = s sum_h P_h A Q_h)
//   dP_h = s * dB Q_h^T A,  dQ_h = s * A P_h^T dB  (A is symmetric)
//   de_j += (dA + dA^T) e_j for j < n              (A = sum_{j<n} e_j e_j^T)
void layer_backward(const ModelShape& m, const std::vector<Mat>& ps, const std::vector<Mat>& qs, int l, const Tokens& e,
                    Tokens& g, std::vector<Mat>& dps, std::vector<Mat>& dqs) {
  const int d1 = m.d + 1;
  const double s = update_scale(m);
  const Mat a = context_moment(m, e);
  const Mat b = layer_matrix(m, ps, qs, l, a);

  Mat db(d1);
  for (int i = 0; i <= m.n; ++i)
    for (int r = 0; r < d1; ++r)
      for (int c = 0; c < d1; ++c) db(r, c) += g[size_t(i * d1 + r)] * e[size_t(i * d1 + c)];

  Tokens de = g;  // the identity part of (I + B)^T
  for (int i = 0; i <= m.n; ++i)
    for (int r = 0; r < d1; ++r)
      for (int c = 0; c < d1; ++c) de[size_t(i * d1 + c)] += b(r, c) * g[size_t(i * d1 + r)];

  Mat da(d1);
  for (int h = 0; h < m.heads; ++h) {
    const size_t blk = size_t(l * m.heads + h);
    const Mat pt = transpose(ps[blk]), qt = transpose(qs[blk]);
    add_scaled(da, s, mul(mul(pt, db), qt));
    add_scaled(dps[blk], s, mul(mul(db, qt), a));
    add_scaled(dqs[blk], s, mul(mul(a, pt), db));
  }

  for (int j = 0; j < m.n; ++j)
    for (int r = 0; r < d1; ++r)
      for (int c = 0; c < d1; ++c) de[size_t(j * d1 + r)] += (da(r, c) + da(c, r)) * e[size_t(j * d1 + c)];
  g = de;
}

}  // namespace

int64_t block_size(const ModelShape& m) {
  switch (m.param) {
    case Param::kDiag: return 4;
    case Param::kGdPlusPlus: return 3;
    case Param::kFull: break;
  }
  return 2 * int64_t(m.d + 1) * int64_t(m.d + 1);
}

int64_t param_count(const ModelShape& m) { return int64_t(m.layers) * m.heads * block_size(m); }

double update_scale(const ModelShape& m) { return m.convention == Convention::kAhn ? 1.0 / m.n : 1.0; }

double loss_scale(Convention c) { return c == Convention::kAhn ? 1.0 : 0.5; }

double task_loss(Convention c, double pred, double target) { return loss_scale(c) * (pred - target) * (pred - target); }

double mean_loss(Convention c, const std::vector<double>& preds, const std::vector<float>& targets) {
  require(preds.size() == targets.size(), "icl: preds.size() != targets.size()");
  double sum = 0.0;
  for (size_t t = 0; t < preds.size(); ++t) sum += task_loss(c, preds[t], targets[t]);
  return preds.empty() ? 0.0 : sum / double(preds.size());
}

double forward(const ModelShape& m, const std::vector<double>& params, const std::vector<float>& tokens,
               const std::vector<float>& targets, std::vector<double>* preds) {
  check_sizes(m, params, tokens, targets);
  std::vector<Mat> ps, qs;
  block_matrices(m, params, ps, qs);
  std::vector<double> out(targets.size());
  for (size_t task = 0; task < targets.size(); ++task) {
    Tokens e = task_tokens(m, tokens, task);
    for (int l = 0; l < m.layers; ++l) layer_forward(m, ps, qs, l, e);
    out[task] = -e[size_t(m.n * (m.d + 1) + m.d)];
  }
  const double loss = mean_loss(m.convention, out, targets);
  if (preds) *preds = out;
  return loss;
}

double loss_and_gradient(const ModelShape& m, const std::vector<double>& params, const std::vector<float>& tokens,
                         const std::vector<float>& targets, std::vector<double>& grad) {
  check_sizes(m, params, tokens, targets);
  std::vector<Mat> ps, qs;
  block_matrices(m, params, ps, qs);
  std::vector<Mat> dps(ps.size(), Mat(m.d + 1)), dqs(qs.size(), Mat(m.d + 1));
  const size_t query_label = size_t(m.n * (m.d + 1) + m.d);
  const double c = loss_scale(m.convention), tasks = double(targets.size());
  std::vector<double> preds(targets.size());
  for (size_t task = 0; task < targets.size(); ++task) {
    std::vector<Tokens> inputs(size_t(m.layers));  // inputs[l]: the tokens entering layer l
    Tokens e = task_tokens(m, tokens, task);
    for (int l = 0; l < m.layers; ++l) {
      inputs[size_t(l)] = e;
      layer_forward(m, ps, qs, l, e);
    }
    const double pred = preds[task] = -e[query_label];
    // Seed: d/d e_n[d] of c (pred - y_q)^2 / tasks with pred = -e_n[d].
    Tokens g(e.size(), 0.0);
    g[query_label] = -2.0 * c * (pred - targets[task]) / tasks;
    for (int l = m.layers - 1; l >= 0; --l) layer_backward(m, ps, qs, l, inputs[size_t(l)], g, dps, dqs);
  }
  fold_gradient(m, dps, dqs, grad);
  return mean_loss(m.convention, preds, targets);
}

double clip_global_norm(std::vector<double>& grad, double max_norm) {
  double sq = 0.0;
  for (double g : grad) sq += g * g;
  const double norm = std::sqrt(sq);
  if (max_norm > 0.0 && norm > max_norm)
    for (double& g : grad) g *= max_norm / norm;
  return norm;
}

void sgd_step(std::vector<double>& params, const std::vector<double>& grad, SgdState& state, double lr,
              double momentum) {
  if (state.velocity.empty()) state.velocity.assign(params.size(), 0.0);
  for (size_t i = 0; i < params.size(); ++i) {
    state.velocity[i] = momentum * state.velocity[i] + grad[i];
    params[i] -= lr * state.velocity[i];
  }
}

void adam_step(std::vector<double>& params, const std::vector<double>& grad, AdamState& state, double lr, double beta1,
               double beta2, double eps) {
  if (state.m.empty()) state.m.assign(params.size(), 0.0);
  if (state.v.empty()) state.v.assign(params.size(), 0.0);
  state.t += 1;
  const double bias1 = 1.0 - std::pow(beta1, double(state.t)), bias2 = 1.0 - std::pow(beta2, double(state.t));
  for (size_t i = 0; i < params.size(); ++i) {
    state.m[i] = beta1 * state.m[i] + (1.0 - beta1) * grad[i];
    state.v[i] = beta2 * state.v[i] + (1.0 - beta2) * grad[i] * grad[i];
    params[i] -= lr * (state.m[i] / bias1) / (std::sqrt(state.v[i] / bias2) + eps);
  }
}

}  // namespace rill::ref::icl
