// Ridge baselines (see ridge.hpp). A Cholesky solve of the smaller normal system; a numerically
// singular one (least squares with repeated or collinear inputs) falls back to the pseudo-inverse
// from a Jacobi eigendecomposition, which gives the minimum-norm solution. A growing diagonal jitter
// is not enough there: it leaves an error of about machine epsilon / jitter (1e-4 at a jitter of
// 1e-12), and an absolute pivot threshold lets a rounding-sized pivot through (weights ~1e30).
#include "icl/ridge.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "core/parallel_for.hpp"

namespace rill::icl {
// Named, not anonymous: BaselineScorer holds them.
namespace ridge_detail {
// Buffers of one solve, kept from solve to solve.
struct SolveBuffers {
  std::vector<double> factor, vectors, solution;
  std::vector<int> perm;
};
class NormalSystem;
}  // namespace ridge_detail
using ridge_detail::NormalSystem;
using ridge_detail::SolveBuffers;

namespace {

using std::size_t;

// Numerical rank: an eigenvalue below kRankTol times the largest counts as 0; the rounding of an
// exactly singular Gram matrix is ~1e-15 relative, well below it. A (pivoted) Cholesky pivot below
// kCholeskyTol times the largest diagonal entry sends the solve to the eigendecomposition, which
// is exact either way: the larger threshold only errs towards the careful path.
constexpr double kRankTol = 1e-12;
constexpr double kCholeskyTol = 1e-10;
// Jacobi sweeps converge quadratically (under 10 for these sizes); the cap only bounds non-finite input.
constexpr int kMaxSweeps = 64;

// S = P^T L L^T P for symmetric S (m x m, row-major) by Cholesky with diagonal pivoting: step j
// takes the largest remaining diagonal entry, perm[j] its row of S. L ends up in the lower triangle
// of s. False when that entry is not above kCholeskyTol times S's largest diagonal entry (or is
// NaN): S is numerically singular. Pivoting is what makes that test reliable: without it the
// rounding left in the last pivot of a singular S is amplified by the earlier small pivots
// (1e-11 relative seen on well-conditioned repeated rows).
bool cholesky_factor(std::vector<double>& s, int m, std::vector<int>& perm) {
  auto at = [&](int r, int c) -> double& { return s[size_t(r) * size_t(m) + size_t(c)]; };
  perm.resize(size_t(m));
  double max_diag = 0.0;
  for (int r = 0; r < m; ++r) {
    perm[size_t(r)] = r;
    max_diag = std::max(max_diag, at(r, r));
  }
  for (int j = 0; j < m; ++j) {
    int p = j;
    for (int i = j + 1; i < m; ++i)
      if (at(i, i) > at(p, p)) p = i;
    if (p != j) {  // symmetric swap of rows and columns j and p, with the rows of L so far
      std::swap(perm[size_t(j)], perm[size_t(p)]);
      for (int k = 0; k < m; ++k) std::swap(at(j, k), at(p, k));
      for (int k = 0; k < m; ++k) std::swap(at(k, j), at(k, p));
    }
    const double pivot = at(j, j);
    if (!(pivot > kCholeskyTol * max_diag)) return false;
    const double l = std::sqrt(pivot);
    at(j, j) = l;
    for (int i = j + 1; i < m; ++i) at(i, j) /= l;
    for (int i = j + 1; i < m; ++i)  // the Schur complement, both triangles
      for (int k = j + 1; k < m; ++k) at(i, k) -= at(i, j) * at(k, j);
  }
  return true;
}

// S = V diag(s_jj) V^T by cyclic Jacobi rotations: s (m x m, symmetric) becomes diagonal, v
// (row-major) gets the eigenvectors as columns.
void jacobi_eigen(std::vector<double>& s, int m, std::vector<double>& v) {
  auto at = [&](std::vector<double>& a, int r, int c) -> double& { return a[size_t(r) * size_t(m) + size_t(c)]; };
  v.assign(size_t(m) * size_t(m), 0.0);
  for (int i = 0; i < m; ++i) at(v, i, i) = 1.0;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double off = 0.0, total = 0.0;
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < m; ++c) (r == c ? total : off) += at(s, r, c) * at(s, r, c);
    if (!(off > 1e-30 * (total + off))) break;  // converged, or not finite
    for (int p = 0; p < m; ++p)
      for (int q = p + 1; q < m; ++q) {
        const double apq = at(s, p, q);
        if (apq == 0.0) continue;
        // The rotation J (c at pp and qq, sn at pq, -sn at qp) that zeroes s_pq in J^T S J.
        const double theta = (at(s, q, q) - at(s, p, p)) / (2.0 * apq);
        const double t = (theta >= 0.0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), sn = t * c;
        for (int k = 0; k < m; ++k) {  // S J
          const double kp = at(s, k, p), kq = at(s, k, q);
          at(s, k, p) = c * kp - sn * kq;
          at(s, k, q) = sn * kp + c * kq;
        }
        for (int k = 0; k < m; ++k) {  // J^T (S J)
          const double pk = at(s, p, k), qk = at(s, q, k);
          at(s, p, k) = c * pk - sn * qk;
          at(s, q, k) = sn * pk + c * qk;
        }
        // What the rotation makes s_pq and s_qp, without its rounding.
        at(s, p, q) = at(s, q, p) = 0.0;
        for (int k = 0; k < m; ++k) {  // V J
          const double kp = at(v, k, p), kq = at(v, k, q);
          at(v, k, p) = c * kp - sn * kq;
          at(v, k, q) = sn * kp + c * kq;
        }
      }
  }
}

// r <- S^+ r for symmetric positive semidefinite S (m x m, row-major): by pivoted Cholesky when S
// is numerically positive definite, else by the eigendecomposition with eigenvalues below kRankTol
// times the largest dropped. For r in the range of S that is the minimum-norm solution of S z = r.
void psd_solve(const std::vector<double>& s, int m, std::vector<double>& r, SolveBuffers& b) {
  std::vector<double>& l = b.factor;
  std::vector<double>& z = b.solution;
  l = s;
  z.assign(size_t(m), 0.0);
  if (cholesky_factor(l, m, b.perm)) {
    const std::vector<int>& perm = b.perm;
    for (int i = 0; i < m; ++i) {  // L y = P r
      double v = r[size_t(perm[size_t(i)])];
      for (int k = 0; k < i; ++k) v -= l[size_t(i) * size_t(m) + size_t(k)] * z[size_t(k)];
      z[size_t(i)] = v / l[size_t(i) * size_t(m) + size_t(i)];
    }
    for (int i = m - 1; i >= 0; --i) {  // L^T (P z) = y
      double v = z[size_t(i)];
      for (int k = i + 1; k < m; ++k) v -= l[size_t(k) * size_t(m) + size_t(i)] * z[size_t(k)];
      z[size_t(i)] = v / l[size_t(i) * size_t(m) + size_t(i)];
    }
    for (int i = 0; i < m; ++i) r[size_t(perm[size_t(i)])] = z[size_t(i)];
    return;
  }
  std::vector<double>& e = b.factor;  // the failed factorization's buffer, refilled
  std::vector<double>& v = b.vectors;
  e = s;
  jacobi_eigen(e, m, v);
  double max_eig = 0.0;
  for (int j = 0; j < m; ++j) max_eig = std::max(max_eig, e[size_t(j) * size_t(m) + size_t(j)]);
  for (int j = 0; j < m; ++j) {  // z = sum over kept j of v_j (v_j . r) / e_j
    const double eig = e[size_t(j) * size_t(m) + size_t(j)];
    if (!(eig > kRankTol * max_eig)) continue;
    double proj = 0.0;
    for (int k = 0; k < m; ++k) proj += v[size_t(k) * size_t(m) + size_t(j)] * r[size_t(k)];
    for (int k = 0; k < m; ++k) z[size_t(k)] += v[size_t(k) * size_t(m) + size_t(j)] * proj / eig;
  }
  r = z;
}

double x(const TaskView& t, int i, int k) { return t.tokens[size_t(i) * size_t(t.d + 1) + size_t(k)]; }
double y(const TaskView& t, int i) { return t.tokens[size_t(i) * size_t(t.d + 1) + size_t(t.d)]; }

}  // namespace

namespace ridge_detail {
// The normal system of a task, built once and solved for any lambda: the primal form
// (X^T X + lambda I) w = X^T y (d x d) when n >= d, else the dual w = X^T alpha with
// (X X^T + lambda I) alpha = y (n x n). One object serves task after task (set_task), its buffers
// kept, so that a thread scoring many tasks allocates nothing per task.
class NormalSystem {
 public:
  NormalSystem() = default;
  explicit NormalSystem(const TaskView& t) { set_task(t); }

  void set_task(const TaskView& t) {
    t_ = t;
    primal_ = t.n >= t.d;
    const int m = primal_ ? t.d : t.n;
    s_.assign(size_t(m) * size_t(m), 0.0);
    rhs_.assign(size_t(m), 0.0);
    if (primal_) {
      for (int i = 0; i < t.n; ++i)
        for (int a = 0; a < t.d; ++a) {
          rhs_[size_t(a)] += x(t, i, a) * y(t, i);
          for (int b = 0; b < t.d; ++b) s_[size_t(a) * size_t(t.d) + size_t(b)] += x(t, i, a) * x(t, i, b);
        }
      return;
    }
    for (int i = 0; i < t.n; ++i) {
      for (int j = 0; j < t.n; ++j) {
        double v = 0.0;
        for (int k = 0; k < t.d; ++k) v += x(t, i, k) * x(t, j, k);
        s_[size_t(i) * size_t(t.n) + size_t(j)] = v;
      }
      rhs_[size_t(i)] = y(t, i);
    }
  }

  // The weights at `lambda`, into `w` (d values).
  void weights(double lambda, std::vector<double>& w) {
    const int m = primal_ ? t_.d : t_.n;
    shifted_ = s_;
    for (int a = 0; a < m; ++a) shifted_[size_t(a) * size_t(m) + size_t(a)] += lambda;
    if (primal_) {
      w = rhs_;
      psd_solve(shifted_, m, w, solve_);
      return;
    }
    alpha_ = rhs_;
    psd_solve(shifted_, m, alpha_, solve_);
    w.assign(size_t(t_.d), 0.0);
    for (int i = 0; i < t_.n; ++i)
      for (int k = 0; k < t_.d; ++k) w[size_t(k)] += x(t_, i, k) * alpha_[size_t(i)];
  }

  double predict(const std::vector<double>& w) const {
    double pred = 0.0;
    for (int k = 0; k < t_.d; ++k) pred += x(t_, t_.n, k) * w[size_t(k)];
    return pred;
  }

  // x_q . w at `lambda`.
  double predict(double lambda) {
    weights(lambda, w_);
    return predict(w_);
  }

  // ||y - X w||^2 / (n - d) with the least-squares weights; 0 when n <= d.
  double sigma2(const std::vector<double>& w_ls) const {
    if (t_.n <= t_.d) return 0.0;
    double rss = 0.0;
    for (int i = 0; i < t_.n; ++i) {
      double r = y(t_, i);
      for (int k = 0; k < t_.d; ++k) r -= x(t_, i, k) * w_ls[size_t(k)];
      rss += r * r;
    }
    return rss / double(t_.n - t_.d);
  }

 private:
  TaskView t_;
  bool primal_ = true;
  std::vector<double> s_, rhs_;              // the task's system
  std::vector<double> shifted_, alpha_, w_;  // one solve's
  SolveBuffers solve_;
};

}  // namespace ridge_detail

namespace {

// Least squares first: its residuals give the noise estimate of ADARR and TUNEDRR.
BaselinePredictions baselines_of(NormalSystem& system, std::vector<double>& w_ls, double oracle_lambda,
                                 double constant_lambda, double tunedrr_factor, double tunedrr_cap) {
  system.weights(0.0, w_ls);
  const double estimate = system.sigma2(w_ls);
  BaselinePredictions out;
  out.least_squares = system.predict(w_ls);
  out.ridge_oracle = system.predict(oracle_lambda);
  out.ridge_constant = system.predict(constant_lambda);
  out.adarr = system.predict(estimate);
  out.tunedrr = system.predict(std::min(tunedrr_factor * estimate, tunedrr_cap));
  return out;
}

}  // namespace

double ridge_predict(const TaskView& t, double lambda) {
  NormalSystem system(t);
  return system.predict(lambda);
}

double adarr_sigma2(const TaskView& t) {
  if (t.n <= t.d) return 0.0;
  NormalSystem system(t);
  std::vector<double> w_ls;
  system.weights(0.0, w_ls);
  return system.sigma2(w_ls);
}

double adarr_predict(const TaskView& t) { return ridge_predict(t, adarr_sigma2(t)); }

double tunedrr_predict(const TaskView& t, double factor, double cap) {
  return ridge_predict(t, std::min(factor * adarr_sigma2(t), cap));
}

BaselinePredictions baseline_predictions(const TaskView& t, double oracle_lambda, double constant_lambda,
                                         double tunedrr_factor, double tunedrr_cap) {
  NormalSystem system(t);
  std::vector<double> w_ls;
  return baselines_of(system, w_ls, oracle_lambda, constant_lambda, tunedrr_factor, tunedrr_cap);
}

struct BaselineScorer::Buffers {
  NormalSystem system;
  std::vector<double> w_ls;
};

BaselineScorer::BaselineScorer() : buffers_(std::make_unique<Buffers>()) {}
BaselineScorer::~BaselineScorer() = default;

BaselinePredictions BaselineScorer::predictions(const TaskView& t, double oracle_lambda, double constant_lambda,
                                                double tunedrr_factor, double tunedrr_cap) {
  buffers_->system.set_task(t);
  return baselines_of(buffers_->system, buffers_->w_ls, oracle_lambda, constant_lambda, tunedrr_factor, tunedrr_cap);
}

TunedRR tune_tunedrr(const std::vector<TaskView>& tasks, const std::vector<float>& targets) {
  TunedRR best;
  double best_error = INFINITY;
  constexpr double kFactors[] = {0.25, 0.5, 1.0, 2.0, 4.0}, kCaps[] = {0.25, 1.0, 4.0, 16.0, 1e9};
  constexpr size_t kGrid = std::size(kFactors) * std::size(kCaps);
  // Each task's squared errors over the grid from its one normal system, in parallel; the sums in
  // task order, as a single thread would add them.
  std::vector<double> errors(tasks.size() * kGrid);
  rill::detail::parallel_for(tasks.size(), 64, [&](size_t begin, size_t end) {
    NormalSystem system;
    std::vector<double> w_ls;
    for (size_t t = begin; t < end; ++t) {
      system.set_task(tasks[t]);
      system.weights(0.0, w_ls);
      const double estimate = system.sigma2(w_ls);
      size_t g = 0;
      for (double factor : kFactors)
        for (double cap : kCaps) {
          const double diff = system.predict(std::min(factor * estimate, cap)) - targets[t];
          errors[t * kGrid + g++] = diff * diff;
        }
    }
  });
  size_t g = 0;
  for (double factor : kFactors)
    for (double cap : kCaps) {
      double error = 0.0;
      for (size_t t = 0; t < tasks.size(); ++t) error += errors[t * kGrid + g];
      if (error < best_error) best_error = error, best = {factor, cap};
      ++g;
    }
  return best;
}

}  // namespace rill::icl
