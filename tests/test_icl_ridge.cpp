// The ridge baselines of ICL evaluation (engine/src/icl/ridge.hpp) against hand-solved systems,
// direct solves and the minimum-norm least-squares solution of rank-deficient contexts. CPU only.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "icl/ridge.hpp"

namespace {

namespace icl = rill::icl;
using std::size_t;

// One task of a linear regression: x ~ N(0, I), y = x . w + sigma * noise; tokens [n + 1][d + 1],
// the query's label slot 0; returns the query's true label.
float linear_task(int d, int n, const std::vector<double>& w, double sigma, std::mt19937& rng, float* tokens) {
  std::normal_distribution<double> normal(0.0, 1.0);
  float target = 0.0f;
  for (int i = 0; i <= n; ++i) {
    double y = 0.0;
    for (int k = 0; k < d; ++k) {
      tokens[i * (d + 1) + k] = float(normal(rng));
      y += double(tokens[i * (d + 1) + k]) * w[size_t(k)];
    }
    y += sigma * normal(rng);
    if (i < n)
      tokens[i * (d + 1) + d] = float(y);
    else
      target = float(y);
  }
  return target;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
  return s;
}

}  // namespace

TEST_CASE("ridge_predict matches a direct solve", "[icl][ridge]") {
  // d = 2, n = 3, X = [[1, 2], [0, 1], [-1, 1]], y = (1, 2, 0.5), x_q = (1, -1), lambda = 0.5:
  //   X^T X + 0.5 I = [[2.5, 1], [1, 6.5]] (det 15.25), X^T y = (0.5, 4.5)
  //   w = [[6.5, -1], [-1, 2.5]] (0.5, 4.5) / 15.25 = (-1.25, 10.75) / 15.25
  //   pred = (-1.25 - 10.75) / 15.25 = -48/61
  const std::vector<float> tokens = {1, 2, 1, 0, 1, 2, -1, 1, 0.5f, 1, -1, 0};
  CHECK(icl::ridge_predict({2, 3, tokens.data()}, 0.5) == Approx(-48.0 / 61.0).epsilon(1e-12));
}

TEST_CASE("ridge_predict with fewer examples than features equals the primal solve", "[icl][ridge]") {
  // n < d takes the dual n x n system; compare with the d x d primal one solved by Cramer's rule.
  std::mt19937 rng(41);
  const std::vector<double> w = {0.5, -1.0, 2.0};
  std::vector<float> tokens(3 * 4);
  linear_task(3, 2, w, 0.1, rng, tokens.data());
  const double lambda = 0.3;
  double g[3][3] = {}, b[3] = {};
  for (int r = 0; r < 3; ++r) {
    g[r][r] = lambda;
    for (int i = 0; i < 2; ++i) {
      b[r] += double(tokens[size_t(i * 4 + r)]) * tokens[size_t(i * 4 + 3)];
      for (int c = 0; c < 3; ++c) g[r][c] += double(tokens[size_t(i * 4 + r)]) * tokens[size_t(i * 4 + c)];
    }
  }
  auto det = [](double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  double pred = 0.0;
  for (int k = 0; k < 3; ++k) {
    double gk[3][3];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) gk[r][c] = c == k ? b[r] : g[r][c];
    pred += det(gk) / det(g) * tokens[size_t(2 * 4 + k)];
  }
  CHECK(icl::ridge_predict({3, 2, tokens.data()}, lambda) == Approx(pred).epsilon(1e-10));
}

TEST_CASE("ridge_predict least squares with fewer examples than features is minimum-norm", "[icl][ridge]") {
  // Rows x_0 = (1, 2, 0), x_1 = (0, 1, 1); z = x_0 x x_1 = (2, -1, 1) is orthogonal to both. The
  // minimum-norm solution lies in the row space, so it fits both labels and ignores z:
  // x_q = x_0 + 2 x_1 + 3 z = (7, 1, 5) predicts y_0 + 2 y_1 = 1.5 + 2 * -2 = -2.5.
  const std::vector<float> tokens = {1, 2, 0, 1.5f, 0, 1, 1, -2, 7, 1, 5, 0};
  CHECK(icl::ridge_predict({3, 2, tokens.data()}, 0.0) == Approx(-2.5).epsilon(1e-12));
}

TEST_CASE("ridge_predict shrinks to 0 as lambda grows", "[icl][ridge]") {
  std::mt19937 rng(43);
  for (int n : {2, 10}) {  // dual and primal
    const std::vector<double> w = {1.0, -2.0, 0.5, 1.5};
    std::vector<float> tokens(size_t(n + 1) * 5);
    linear_task(4, n, w, 0.1, rng, tokens.data());
    const icl::TaskView task{4, n, tokens.data()};
    INFO("n " << n);
    CHECK(std::abs(icl::ridge_predict(task, 1.0)) > 1e-3);
    CHECK(std::abs(icl::ridge_predict(task, 1e12)) < 1e-9);
  }
}

TEST_CASE("ridge_predict least squares is exact without noise when n >= d", "[icl][ridge]") {
  // Integer x and w, so y = X w is exact in float and the solve exact up to double rounding.
  std::mt19937 rng(47);
  std::uniform_int_distribution<int> small(-3, 3);
  const int d = 3;
  const std::vector<double> w = {2, -1, 3};
  for (int n : {3, 5, 9}) {
    std::vector<float> tokens(size_t(n + 1) * 4);
    for (int i = 0; i <= n; ++i) {
      double y = 0.0;
      for (int k = 0; k < d; ++k) {
        // n == d: the identity plus one off-diagonal entry, invertible; else random integers.
        tokens[size_t(i * 4 + k)] = float(n == d && i < n ? (i == k) + (i == 0 && k == 2) : small(rng));
        y += tokens[size_t(i * 4 + k)] * w[size_t(k)];
      }
      tokens[size_t(i * 4 + 3)] = i < n ? float(y) : 0.0f;
    }
    double expected = 0.0;
    for (int k = 0; k < d; ++k) expected += tokens[size_t(n * 4 + k)] * w[size_t(k)];
    const icl::TaskView task{d, n, tokens.data()};
    INFO("n " << n);
    CHECK(icl::ridge_predict(task, 0.0) == Approx(expected).margin(1e-9));
    CHECK(icl::adarr_sigma2(task) == Approx(0.0).margin(1e-12));
  }
}

TEST_CASE("ridge_predict least squares with repeated inputs is the minimum-norm solution", "[icl][ridge]") {
  // X has rank < min(n, d), so the normal system is singular. Least squares fits the mean label of
  // each distinct input; the minimum-norm w among those fits lies in the span of the inputs.
  SECTION("n >= d: the primal system is singular") {
    // d = 3, n = 4: x_0 = x_1 = a = (1, 2, 0) with y = 1, 2 (mean 1.5); x_2 = x_3 = b = (0, 1, 1)
    // with y = -1, -3 (mean -2). z = a x b = (2, -1, 1) is orthogonal to both, so
    // x_q = a + 2 b + 3 z = (7, 1, 5) predicts 1.5 + 2 * -2 = -2.5.
    const std::vector<float> tokens = {1, 2, 0, 1, 1, 2, 0, 2, 0, 1, 1, -1, 0, 1, 1, -3, 7, 1, 5, 0};
    const double pred = icl::ridge_predict({3, 4, tokens.data()}, 0.0);
    CHECK(std::isfinite(pred));
    CHECK(pred == Approx(-2.5).margin(1e-6));
  }
  SECTION("n < d: the dual system is singular") {
    // d = 3, n = 2, x_0 = x_1 = a = (1, 2, 0) with y = 1, 2: w = 1.5 a / |a|^2, and x_q = (7, 1, 5)
    // predicts 1.5 * (a . x_q) / |a|^2 = 1.5 * 9 / 5 = 2.7.
    const std::vector<float> tokens = {1, 2, 0, 1, 1, 2, 0, 2, 7, 1, 5, 0};
    const double pred = icl::ridge_predict({3, 2, tokens.data()}, 0.0);
    CHECK(std::isfinite(pred));
    CHECK(pred == Approx(2.7).margin(1e-6));
  }
  SECTION("collinear inputs") {
    // d = 2, n = 3, x_i = t_i (1, 1) with t = (1, 2, -1), y = (1, 3, 0): the fit of s = (1, 1) . w is
    // s = (t . y) / (t . t) = 7/6, w = s (1, 1) / 2, and x_q = (1, 0) predicts 7/12.
    const std::vector<float> tokens = {1, 1, 1, 2, 2, 3, -1, -1, 0, 1, 0, 0};
    CHECK(icl::ridge_predict({2, 3, tokens.data()}, 0.0) == Approx(7.0 / 12.0).margin(1e-6));
    CHECK(std::isfinite(icl::ridge_predict({2, 3, tokens.data()}, 0.1)));
  }
}

TEST_CASE("ridge_predict least squares on repeated random inputs is the minimum-norm solution", "[icl][ridge]") {
  // Two random inputs a, b in d = 5, each repeated `copies` times with random labels (mean y_a, y_b).
  // The minimum-norm fit is w = alpha a + beta b with [a.a a.b; a.b b.b] (alpha, beta) = (y_a, y_b):
  // a 2 x 2 system solved by Cramer's rule. Inputs that are not small integers leave rounding in
  // the singular system's last pivot, which a solver must not take for a real one.
  const int d = 5;
  std::mt19937 rng(67);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int trial = 0; trial < 50; ++trial) {
    const int copies = 2 + trial % 4;  // n = 4 (dual), 6, 8, 10 (primal)
    const int n = 2 * copies;
    std::vector<double> a(d), b(d), q(d);
    for (int k = 0; k < d; ++k) {
      a[size_t(k)] = float(normal(rng));
      b[size_t(k)] = float(normal(rng));
      q[size_t(k)] = float(normal(rng));
    }
    std::vector<float> tokens(size_t(n + 1) * (d + 1), 0.0f);
    double y_a = 0.0, y_b = 0.0;
    for (int i = 0; i < n; ++i) {
      const std::vector<double>& x = i % 2 == 0 ? a : b;
      for (int k = 0; k < d; ++k) tokens[size_t(i * (d + 1) + k)] = float(x[size_t(k)]);
      const float y = float(3.0 * normal(rng));
      tokens[size_t(i * (d + 1) + d)] = y;
      (i % 2 == 0 ? y_a : y_b) += double(y) / copies;
    }
    for (int k = 0; k < d; ++k) tokens[size_t(n * (d + 1) + k)] = float(q[size_t(k)]);
    const double aa = dot(a, a), ab = dot(a, b), bb = dot(b, b), det = aa * bb - ab * ab;
    const double alpha = (y_a * bb - y_b * ab) / det, beta = (aa * y_b - ab * y_a) / det;
    const double expected = alpha * dot(a, q) + beta * dot(b, q);
    const double pred = icl::ridge_predict({d, n, tokens.data()}, 0.0);
    INFO("trial " << trial << ", n " << n);
    CHECK(std::isfinite(pred));
    CHECK(pred == Approx(expected).margin(1e-6));
  }
}

TEST_CASE("adarr_sigma2 is unbiased on average over noisy tasks", "[icl][ridge]") {
  const int d = 4, n = 12, tasks = 4000;
  const double sigma = 0.5;
  std::mt19937 rng(53);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> tokens(size_t(n + 1) * (d + 1));
  double sum = 0.0;
  for (int t = 0; t < tasks; ++t) {
    std::vector<double> w(d);
    for (double& x : w) x = normal(rng);
    linear_task(d, n, w, sigma, rng, tokens.data());
    sum += icl::adarr_sigma2({d, n, tokens.data()});
  }
  // One estimate has standard deviation sigma^2 sqrt(2 / (n - d)) = 0.125; the mean of 4000, 0.002.
  // Dividing by n instead of n - d would give 0.167.
  CHECK(sum / tasks == Approx(sigma * sigma).epsilon(0.04));
}

TEST_CASE("adarr_sigma2 is 0 when least squares interpolates", "[icl][ridge]") {
  std::mt19937 rng(59);
  for (int n : {2, 4}) {
    std::vector<float> tokens(size_t(n + 1) * 5);
    linear_task(4, n, {1, 2, 3, 4}, 1.0, rng, tokens.data());
    CHECK(icl::adarr_sigma2({4, n, tokens.data()}) == 0.0);
  }
}

TEST_CASE("adarr and tunedrr are ridge with their lambda", "[icl][ridge]") {
  std::mt19937 rng(61);
  std::vector<float> tokens(11 * 4);
  linear_task(3, 10, {1, -1, 0.5}, 0.8, rng, tokens.data());
  const icl::TaskView task{3, 10, tokens.data()};
  const double s2 = icl::adarr_sigma2(task);
  REQUIRE(s2 > 0.0);
  CHECK(icl::adarr_predict(task) == icl::ridge_predict(task, s2));
  CHECK(icl::tunedrr_predict(task, 2.0, 100.0) == icl::ridge_predict(task, std::min(2.0 * s2, 100.0)));  // not capped
  CHECK(icl::tunedrr_predict(task, 2.0, 0.25 * s2) == icl::ridge_predict(task, std::min(2.0 * s2, 0.25 * s2)));
  CHECK(icl::ridge_predict(task, s2) != icl::ridge_predict(task, 2.0 * s2));  // lambda matters here
  CHECK(icl::ridge_predict(task, 2.0 * s2) != icl::ridge_predict(task, 0.25 * s2));
}

TEST_CASE("baseline_predictions gives each baseline's value bit for bit from one system", "[icl][ridge]") {
  std::mt19937 rng(67);
  // Primal (n > d), square, dual (n < d), and repeated inputs (the singular least-squares path).
  for (const auto& [d, n] : {std::pair{3, 10}, {5, 5}, {8, 4}, {4, 9}}) {
    std::vector<float> tokens(size_t(n + 1) * (d + 1));
    std::vector<double> w(size_t(d), 0.7);
    linear_task(d, n, w, 0.5, rng, tokens.data());
    if (d == 4)  // every context row the same input: rank 1
      for (int i = 1; i < n; ++i)
        for (int k = 0; k < d; ++k) tokens[size_t(i) * (d + 1) + k] = tokens[size_t(k)];
    const icl::TaskView task{d, n, tokens.data()};
    const auto b = icl::baseline_predictions(task, 0.3, 1.5, 2.0, 0.4);
    INFO("d " << d << " n " << n);
    CHECK(b.ridge_oracle == icl::ridge_predict(task, 0.3));
    CHECK(b.least_squares == icl::ridge_predict(task, 0.0));
    CHECK(b.ridge_constant == icl::ridge_predict(task, 1.5));
    CHECK(b.adarr == icl::adarr_predict(task));
    CHECK(b.tunedrr == icl::tunedrr_predict(task, 2.0, 0.4));
    CHECK(b.ridge_oracle != b.ridge_constant);
  }
}

TEST_CASE("a BaselineScorer reused across tasks of any shape gives baseline_predictions bit for bit", "[icl][ridge]") {
  std::mt19937 rng(71);
  icl::BaselineScorer scorer;
  // Shapes and paths in turn (primal, dual, singular, larger then smaller systems), twice: a
  // buffer the previous task left bigger or filled must not leak into the next task's solve.
  const std::pair<int, int> shapes[] = {{10, 20}, {3, 2}, {4, 9}, {8, 4}, {1, 1}, {12, 30}, {5, 5}};
  for (int round = 0; round < 2; ++round)
    for (const auto& [d, n] : shapes) {
      std::vector<float> tokens(size_t(n + 1) * (d + 1));
      std::vector<double> w(size_t(d), -0.4);
      linear_task(d, n, w, 0.3, rng, tokens.data());
      if (d == 4)  // rank 1: the eigendecomposition path
        for (int i = 1; i < n; ++i)
          for (int k = 0; k < d; ++k) tokens[size_t(i) * (d + 1) + k] = tokens[size_t(k)];
      const icl::TaskView task{d, n, tokens.data()};
      const auto fresh = icl::baseline_predictions(task, 0.2, 1.0, 0.5, 4.0);
      const auto reused = scorer.predictions(task, 0.2, 1.0, 0.5, 4.0);
      INFO("round " << round << " d " << d << " n " << n);
      CHECK(reused.ridge_oracle == fresh.ridge_oracle);
      CHECK(reused.least_squares == fresh.least_squares);
      CHECK(reused.ridge_constant == fresh.ridge_constant);
      CHECK(reused.adarr == fresh.adarr);
      CHECK(reused.tunedrr == fresh.tunedrr);
      CHECK(std::isfinite(reused.least_squares));
    }
}
