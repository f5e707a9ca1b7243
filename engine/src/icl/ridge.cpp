#include "icl/ridge.hpp"

#include <cmath>
#include <vector>

namespace rill::icl {
namespace {

// Solves S z = r for symmetric positive definite S (m x m, row-major) by Cholesky; false when S
// is not numerically positive definite.
bool cholesky_solve(std::vector<double> s, int m, std::vector<double>& r) {
  for (int j = 0; j < m; ++j) {
    double diag = s[j * m + j];
    for (int k = 0; k < j; ++k) diag -= s[j * m + k] * s[j * m + k];
    if (!(diag > 1e-300)) return false;
    const double l = std::sqrt(diag);
    s[j * m + j] = l;
    for (int i = j + 1; i < m; ++i) {
      double v = s[i * m + j];
      for (int k = 0; k < j; ++k) v -= s[i * m + k] * s[j * m + k];
      s[i * m + j] = v / l;
    }
  }
  for (int i = 0; i < m; ++i) {  // L y = r
    double v = r[i];
    for (int k = 0; k < i; ++k) v -= s[i * m + k] * r[k];
    r[i] = v / s[i * m + i];
  }
  for (int i = m - 1; i >= 0; --i) {  // L^T z = y
    double v = r[i];
    for (int k = i + 1; k < m; ++k) v -= s[k * m + i] * r[k];
    r[i] = v / s[i * m + i];
  }
  return true;
}

double x(const TaskView& t, int i, int k) { return t.tokens[i * (t.d + 1) + k]; }
double y(const TaskView& t, int i) { return t.tokens[i * (t.d + 1) + t.d]; }

// Primal form: (X^T X + lambda I) w = X^T y, d x d.
bool primal_weights(const TaskView& t, double lambda, std::vector<double>& w) {
  std::vector<double> s(size_t(t.d) * t.d, 0.0);
  w.assign(t.d, 0.0);
  for (int i = 0; i < t.n; ++i)
    for (int a = 0; a < t.d; ++a) {
      w[a] += x(t, i, a) * y(t, i);
      for (int b = 0; b < t.d; ++b) s[a * t.d + b] += x(t, i, a) * x(t, i, b);
    }
  for (int a = 0; a < t.d; ++a) s[a * t.d + a] += lambda;
  return cholesky_solve(std::move(s), t.d, w);
}

// Dual form: w = X^T (X X^T + lambda I)^{-1} y, n x n; the minimum-norm solution at lambda = 0.
// A jitter relative to the trace keeps repeated inputs solvable.
std::vector<double> dual_weights(const TaskView& t, double lambda) {
  std::vector<double> g(size_t(t.n) * t.n, 0.0);
  double trace = 0.0;
  for (int i = 0; i < t.n; ++i)
    for (int j = 0; j < t.n; ++j) {
      double v = 0.0;
      for (int k = 0; k < t.d; ++k) v += x(t, i, k) * x(t, j, k);
      g[i * t.n + j] = v + (i == j ? lambda : 0.0);
      if (i == j) trace += v;
    }
  std::vector<double> alpha(t.n);
  for (double jitter = 0.0;; jitter = jitter == 0.0 ? 1e-12 * (trace + 1.0) : jitter * 100.0) {
    std::vector<double> s = g;
    for (int i = 0; i < t.n; ++i) s[i * t.n + i] += jitter;
    for (int i = 0; i < t.n; ++i) alpha[i] = y(t, i);
    if (cholesky_solve(std::move(s), t.n, alpha) || jitter > 1e6 * (trace + 1.0)) break;
  }
  std::vector<double> w(t.d, 0.0);
  for (int i = 0; i < t.n; ++i)
    for (int k = 0; k < t.d; ++k) w[k] += x(t, i, k) * alpha[i];
  return w;
}

std::vector<double> ridge_weights(const TaskView& t, double lambda) {
  std::vector<double> w;
  if (t.n >= t.d && primal_weights(t, lambda, w)) return w;
  return dual_weights(t, lambda);
}

}  // namespace

double ridge_predict(const TaskView& t, double lambda) {
  const std::vector<double> w = ridge_weights(t, lambda);
  double pred = 0.0;
  for (int k = 0; k < t.d; ++k) pred += x(t, t.n, k) * w[k];
  return pred;
}

double adarr_sigma2(const TaskView& t) {
  if (t.n <= t.d) return 0.0;
  const std::vector<double> w = ridge_weights(t, 0.0);
  double rss = 0.0;
  for (int i = 0; i < t.n; ++i) {
    double r = y(t, i);
    for (int k = 0; k < t.d; ++k) r -= x(t, i, k) * w[k];
    rss += r * r;
  }
  return rss / double(t.n - t.d);
}

}  // namespace rill::icl
