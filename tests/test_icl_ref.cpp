// The ICL reference (engine/ref/icl.hpp) against hand-derived numbers, finite differences, the
// constructions of the papers (one gradient-descent step, GD++) and its own parameterizations (DIAG
// as FULL, GD++ as DIAG). CPU only; the ridge baselines are tested in test_icl_ridge.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>

#include "icl/config_json.hpp"
#include "icl.hpp"

namespace {

namespace icl = rill::ref::icl;
using icl::Convention;
using icl::ModelShape;
using icl::Param;
using std::size_t;

constexpr Param kParams[] = {Param::kFull, Param::kDiag, Param::kGdPlusPlus};
constexpr Convention kConventions[] = {Convention::kAhn, Convention::kVladymyrov};

// A batch of random tasks: every x, every context y and every target ~ N(0, 1); query labels 0.
void random_batch(const ModelShape& m, int tasks, unsigned seed, std::vector<float>& tokens,
                  std::vector<float>& targets) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int d1 = m.d + 1;
  tokens.assign(size_t(tasks) * size_t(m.n + 1) * size_t(d1), 0.0f);
  targets.assign(size_t(tasks), 0.0f);
  for (int t = 0; t < tasks; ++t) {
    float* e = &tokens[size_t(t) * size_t(m.n + 1) * size_t(d1)];
    for (int i = 0; i <= m.n; ++i)
      for (int k = 0; k < d1; ++k) e[i * d1 + k] = (i == m.n && k == m.d) ? 0.0f : float(normal(rng));
    targets[size_t(t)] = float(normal(rng));
  }
}

std::vector<double> random_params(const ModelShape& m, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.3);
  std::vector<double> p(size_t(icl::param_count(m)));
  for (double& x : p) x = normal(rng);
  return p;
}

}  // namespace

TEST_CASE("icl forward of a tiny case matches numbers derived by hand", "[icl]") {
  // d = 1, n = 1, L = 1, H = 1. Context token e_0 = (2, 3), query (1, 0), y_q = 5.
  //   A = e_0 e_0^T = [[4, 6], [6, 9]]; s = 1/n = 1 in both conventions.
  //   P = [[1, 2], [3, 4]], Q = [[0.5, -1], [2, 0.25]]
  //   A Q = [[4*0.5 + 6*2, 4*-1 + 6*0.25], [6*0.5 + 9*2, 6*-1 + 9*0.25]] = [[14, -2.5], [21, -3.75]]
  //   B = P A Q = [[14 + 2*21, -2.5 + 2*-3.75], [3*14 + 4*21, 3*-2.5 + 4*-3.75]] = [[56, -10], [126, -22.5]]
  //   query' = (1, 0) + B (1, 0) = (57, 126); pred = -126
  //   loss = c (-126 - 5)^2 = 17161 c: 17161 (kAhn), 8580.5 (kVladymyrov).
  const std::vector<float> tokens = {2, 3, 1, 0}, targets = {5};
  const std::vector<double> params = {1, 2, 3, 4, 0.5, -1, 2, 0.25};
  for (auto [conv, loss] : {std::pair{Convention::kAhn, 17161.0}, std::pair{Convention::kVladymyrov, 8580.5}}) {
    std::vector<double> preds;
    CHECK(icl::forward({1, 1, 1, 1, Param::kFull, conv}, params, tokens, targets, &preds) == Approx(loss));
    REQUIRE(preds.size() == 1);
    CHECK(preds[0] == Approx(-126.0));
  }
}

TEST_CASE("icl forward with two layers updates the context tokens as derived by hand", "[icl]") {
  // d = 1, n = 1, L = 2, both layers P = [[0, 0], [0, 1]], Q = [[-1, 0], [0, 0]]. Then
  // P A Q = [[0, 0], [-A[1][0], 0]] with A[1][0] = x_0 y_0: x is unchanged, y_i -= x_0 y_0 x_i.
  //   layer 1: x_0 y_0 = 2*3 = 6;     y_0 = 3 - 6*2 = -9;  y_q = 0 - 6*1 = -6
  //   layer 2: x_0 y_0 = 2*-9 = -18;  y_q = -6 + 18*1 = 12;  pred = -12
  // The second layer sees the updated context label: without it y_q would be -12 and pred 12.
  const std::vector<float> tokens = {2, 3, 1, 0}, targets = {0};
  const std::vector<double> params = {0, 0, 0, 1, -1, 0, 0, 0, 0, 0, 0, 1, -1, 0, 0, 0};
  std::vector<double> preds;
  CHECK(icl::forward({1, 1, 2, 1, Param::kFull, Convention::kAhn}, params, tokens, targets, &preds) == Approx(144.0));
  CHECK(preds[0] == Approx(-12.0));
}

TEST_CASE("icl update scale is 1/n for kAhn and 1 for kVladymyrov", "[icl]") {
  // d = 1, n = 2: context (2, 3), (1, -1), query (1, 0); P = [[0, 0], [0, 1]], Q = [[-1, 0], [0, 0]].
  // B e_q = s (0, -sum_j y_j x_j x_q) = s (0, -(6 - 1)); pred = 5 s: 2.5 (kAhn), 5 (kVladymyrov).
  const std::vector<float> tokens = {2, 3, 1, -1, 1, 0}, targets = {0};
  const std::vector<double> params = {0, 0, 0, 1, -1, 0, 0, 0};
  std::vector<double> preds;
  icl::forward({1, 2, 1, 1, Param::kFull, Convention::kAhn}, params, tokens, targets, &preds);
  CHECK(preds[0] == Approx(2.5));
  icl::forward({1, 2, 1, 1, Param::kFull, Convention::kVladymyrov}, params, tokens, targets, &preds);
  CHECK(preds[0] == Approx(5.0));
}

TEST_CASE("icl analytic gradients equal central finite differences", "[icl]") {
  struct Dims {
    int d, n, layers, heads;
  };
  unsigned seed = 100;
  for (Dims s : {Dims{1, 1, 1, 1}, Dims{3, 7, 3, 2}, Dims{5, 20, 2, 1}}) {
    for (Param param : kParams) {
      for (Convention conv : kConventions) {
        const ModelShape m{s.d, s.n, s.layers, s.heads, param, conv};
        ++seed;
        INFO("d " << s.d << " n " << s.n << " L " << s.layers << " H " << s.heads << " param " << int(param)
                  << " convention " << int(conv) << " seed " << seed);
        std::vector<float> tokens, targets;
        random_batch(m, 3, seed, tokens, targets);
        std::vector<double> params = random_params(m, seed), grad;
        const double loss = icl::loss_and_gradient(m, params, tokens, targets, grad);
        CHECK(loss == icl::forward(m, params, tokens, targets));
        REQUIRE(grad.size() == params.size());
        double scale = 1.0;
        for (double g : grad) scale = std::max(scale, std::abs(g));
        for (size_t i = 0; i < params.size(); ++i) {
          const double p = params[i], h = 1e-5 * std::max(1.0, std::abs(p));
          params[i] = p + h;
          const double up = icl::forward(m, params, tokens, targets);
          params[i] = p - h;
          const double down = icl::forward(m, params, tokens, targets);
          params[i] = p;
          INFO("param " << i);
          CHECK(grad[i] == Approx((up - down) / (2.0 * h)).epsilon(1e-5).margin(1e-7 * scale));
        }
      }
    }
  }
}

TEST_CASE("icl DIAG equals FULL with the corresponding diagonal matrices", "[icl]") {
  for (Convention conv : kConventions) {
    const ModelShape diag{3, 7, 3, 2, Param::kDiag, conv}, full{3, 7, 3, 2, Param::kFull, conv};
    std::vector<float> tokens, targets;
    random_batch(diag, 4, 7, tokens, targets);
    const std::vector<double> dp = random_params(diag, 8);
    std::vector<double> fp(size_t(icl::param_count(full)), 0.0);
    const int d1 = 4, bs = 2 * d1 * d1;
    for (int b = 0; b < 3 * 2; ++b) {
      for (int k = 0; k < d1; ++k) {
        fp[size_t(b * bs + k * d1 + k)] = dp[size_t(4 * b + (k < 3 ? 0 : 1))];            // P
        fp[size_t(b * bs + d1 * d1 + k * d1 + k)] = dp[size_t(4 * b + (k < 3 ? 2 : 3))];  // Q
      }
    }
    std::vector<double> dpreds, fpreds, dgrad, fgrad;
    CHECK(icl::forward(diag, dp, tokens, targets, &dpreds) ==
          Approx(icl::forward(full, fp, tokens, targets, &fpreds)).epsilon(1e-12));
    for (size_t t = 0; t < dpreds.size(); ++t) CHECK(dpreds[t] == Approx(fpreds[t]).epsilon(1e-12));
    // A shared diagonal parameter's gradient is the sum over the entries it fills.
    icl::loss_and_gradient(diag, dp, tokens, targets, dgrad);
    icl::loss_and_gradient(full, fp, tokens, targets, fgrad);
    for (int b = 0; b < 3 * 2; ++b) {
      double px = 0.0, qx = 0.0;
      for (int k = 0; k < 3; ++k) {
        px += fgrad[size_t(b * bs + k * d1 + k)];
        qx += fgrad[size_t(b * bs + d1 * d1 + k * d1 + k)];
      }
      INFO("block " << b << " convention " << int(conv));
      CHECK(dgrad[size_t(4 * b + 0)] == Approx(px).epsilon(1e-10));
      CHECK(dgrad[size_t(4 * b + 1)] == Approx(fgrad[size_t(b * bs + 3 * d1 + 3)]).epsilon(1e-10));
      CHECK(dgrad[size_t(4 * b + 2)] == Approx(qx).epsilon(1e-10));
      CHECK(dgrad[size_t(4 * b + 3)] == Approx(fgrad[size_t(b * bs + d1 * d1 + 3 * d1 + 3)]).epsilon(1e-10));
    }
  }
}

TEST_CASE("icl GD++ equals DIAG with q_y = 0", "[icl]") {
  for (Convention conv : kConventions) {
    const ModelShape gdpp{4, 9, 2, 3, Param::kGdPlusPlus, conv}, diag{4, 9, 2, 3, Param::kDiag, conv};
    std::vector<float> tokens, targets;
    random_batch(gdpp, 4, 11, tokens, targets);
    const std::vector<double> gp = random_params(gdpp, 12);
    std::vector<double> dp;
    for (size_t b = 0; b < gp.size() / 3; ++b) dp.insert(dp.end(), {gp[3 * b], gp[3 * b + 1], gp[3 * b + 2], 0.0});
    std::vector<double> gpreds, dpreds, ggrad, dgrad;
    CHECK(icl::forward(gdpp, gp, tokens, targets, &gpreds) == icl::forward(diag, dp, tokens, targets, &dpreds));
    CHECK(gpreds == dpreds);
    icl::loss_and_gradient(gdpp, gp, tokens, targets, ggrad);
    icl::loss_and_gradient(diag, dp, tokens, targets, dgrad);
    for (size_t b = 0; b < gp.size() / 3; ++b)
      for (size_t k = 0; k < 3; ++k) CHECK(ggrad[3 * b + k] == dgrad[4 * b + k]);
  }
}

TEST_CASE("icl one layer implements one step of gradient descent", "[icl]") {
  // P with only the bottom-right entry p and Q = -eta [[I, 0], [0, 0]]: row d of P A Q is
  // -eta p (sum_j y_j x_j^T, 0), so pred = -(B e_q)[d] = s eta p sum_j y_j x_j . x_q: one GD step from
  // w = 0 with step eta p on sum_j (w . x_j - y_j)^2 / 2, scaled by s (1/n for kAhn, 1 for kVladymyrov).
  const double p = 0.7, eta = 0.3;
  for (Param param : kParams) {
    for (Convention conv : kConventions) {
      const ModelShape m{3, 7, 1, 1, param, conv};
      std::vector<double> params(size_t(icl::param_count(m)), 0.0);
      if (param == Param::kFull) {
        params[size_t(3 * 4 + 3)] = p;
        for (int k = 0; k < 3; ++k) params[size_t(16 + k * 4 + k)] = -eta;
      } else {
        params[1] = p;     // p_y (p_x = 0)
        params[2] = -eta;  // q_x (q_y = 0)
      }
      std::vector<float> tokens, targets;
      random_batch(m, 5, 21, tokens, targets);
      std::vector<double> preds;
      icl::forward(m, params, tokens, targets, &preds);
      for (int t = 0; t < 5; ++t) {
        const float* e = &tokens[size_t(t) * 8 * 4];
        double gd = 0.0;
        for (int j = 0; j < 7; ++j)
          for (int k = 0; k < 3; ++k) gd += double(e[j * 4 + 3]) * e[j * 4 + k] * e[7 * 4 + k];
        INFO("param " << int(param) << " convention " << int(conv) << " task " << t);
        CHECK(preds[size_t(t)] == Approx(icl::update_scale(m) * eta * p * gd).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("icl GD++ layers precondition x and take a gradient step on y", "[icl]") {
  // With P = diag(p_x I, p_y), Q = diag(q_x I, 0) a layer is, over the layer's input
  // (S = sum_{j<n} x_j x_j^T, v = sum_{j<n} y_j x_j):
  //   x_i <- (I + s p_x q_x S) x_i,   y_i <- y_i + s p_y q_x v . x_i.
  // Recomputed here in that form over two layers, separately from the matrix code.
  const int d = 3, n = 6, layers = 2;
  for (Convention conv : kConventions) {
    const ModelShape m{d, n, layers, 1, Param::kGdPlusPlus, conv};
    const double s = icl::update_scale(m);
    std::vector<float> tokens, targets;
    random_batch(m, 3, 31, tokens, targets);
    const std::vector<double> params = random_params(m, 32);
    std::vector<double> preds;
    icl::forward(m, params, tokens, targets, &preds);
    for (int t = 0; t < 3; ++t) {
      std::vector<std::vector<double>> x(n + 1, std::vector<double>(d));
      std::vector<double> y(n + 1);
      for (int i = 0; i <= n; ++i) {
        for (int k = 0; k < d; ++k) x[size_t(i)][size_t(k)] = tokens[size_t((t * (n + 1) + i) * (d + 1) + k)];
        y[size_t(i)] = tokens[size_t((t * (n + 1) + i) * (d + 1) + d)];
      }
      for (int l = 0; l < layers; ++l) {
        const double px = params[size_t(3 * l)], py = params[size_t(3 * l + 1)], qx = params[size_t(3 * l + 2)];
        std::vector<std::vector<double>> sxx(d, std::vector<double>(d, 0.0));
        std::vector<double> v(d, 0.0);
        for (int j = 0; j < n; ++j)
          for (int a = 0; a < d; ++a) {
            v[size_t(a)] += y[size_t(j)] * x[size_t(j)][size_t(a)];
            for (int b = 0; b < d; ++b) sxx[size_t(a)][size_t(b)] += x[size_t(j)][size_t(a)] * x[size_t(j)][size_t(b)];
          }
        for (int i = 0; i <= n; ++i) {
          const std::vector<double> xi = x[size_t(i)];
          for (int a = 0; a < d; ++a) {
            y[size_t(i)] += s * py * qx * v[size_t(a)] * xi[size_t(a)];
            for (int b = 0; b < d; ++b)
              x[size_t(i)][size_t(a)] += s * px * qx * sxx[size_t(a)][size_t(b)] * xi[size_t(b)];
          }
        }
      }
      INFO("convention " << int(conv) << " task " << t);
      CHECK(preds[size_t(t)] == Approx(-y[size_t(n)]).epsilon(1e-12));
    }
  }
}

TEST_CASE("icl forward refuses inconsistent sizes", "[icl]") {
  const ModelShape m{2, 3, 1, 1, Param::kDiag, Convention::kAhn};
  std::vector<float> tokens, targets;
  random_batch(m, 2, 1, tokens, targets);
  std::vector<double> params(4, 0.1), grad;
  CHECK_NOTHROW(icl::forward(m, params, tokens, targets));
  CHECK_THROWS_AS(icl::forward(m, std::vector<double>(5, 0.1), tokens, targets), std::invalid_argument);
  targets.push_back(0.0f);
  CHECK_THROWS_AS(icl::loss_and_gradient(m, params, tokens, targets, grad), std::invalid_argument);
  CHECK(icl::forward(m, params, {}, {}) == 0.0);
}

TEST_CASE("clip_global_norm scales to the maximum norm and returns the norm before", "[icl]") {
  std::vector<double> g = {3, 4};
  CHECK(icl::clip_global_norm(g, 2.5) == Approx(5.0));
  CHECK(g[0] == Approx(1.5));
  CHECK(g[1] == Approx(2.0));
  g = {3, 4};
  CHECK(icl::clip_global_norm(g, 10.0) == Approx(5.0));
  CHECK(g == std::vector<double>{3, 4});
  CHECK(icl::clip_global_norm(g, 0.0) == Approx(5.0));  // disabled
  CHECK(g == std::vector<double>{3, 4});
  g = {0, 0};
  CHECK(icl::clip_global_norm(g, 1.0) == 0.0);
  CHECK(g == std::vector<double>{0, 0});
}

TEST_CASE("sgd_step with momentum matches hand-computed steps", "[icl]") {
  // lr 0.1, momentum 0.9. Step 1, g = (0.5, 1): v = (0.5, 1), p = (1, -2) - 0.1 v = (0.95, -2.1).
  // Step 2, g = (1, -1): v = 0.9 (0.5, 1) + g = (1.45, -0.1), p = (0.95 - 0.145, -2.1 + 0.01) = (0.805, -2.09).
  std::vector<double> p = {1, -2};
  icl::SgdState state;
  icl::sgd_step(p, {0.5, 1}, state, 0.1, 0.9);
  CHECK(p[0] == Approx(0.95));
  CHECK(p[1] == Approx(-2.1));
  icl::sgd_step(p, {1, -1}, state, 0.1, 0.9);
  CHECK(state.velocity[0] == Approx(1.45));
  CHECK(state.velocity[1] == Approx(-0.1));
  CHECK(p[0] == Approx(0.805));
  CHECK(p[1] == Approx(-2.09));
}

TEST_CASE("adam_step matches hand-computed steps", "[icl]") {
  // lr 0.1, b1 0.9, b2 0.999, eps 1e-8, p = 1.
  // t = 1, g = 0.5: m = 0.05, v = 0.00025; m^ = 0.5, v^ = 0.25; p = 1 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.900000002
  // t = 2, g = -1: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001 = 0.00124975;
  //   m^ = -0.055 / 0.19 = -0.289473684, v^ = 0.00124975 / 0.001999 = 0.625187594, sqrt = 0.790688051;
  //   p = 0.900000002 + 0.1 * 0.289473684 / 0.790688061 = 0.936610354
  std::vector<double> p = {1};
  icl::AdamState state;
  icl::adam_step(p, {0.5}, state, 0.1, 0.9, 0.999, 1e-8);
  CHECK(state.t == 1);
  CHECK(p[0] == Approx(0.900000002).epsilon(1e-12));
  icl::adam_step(p, {-1}, state, 0.1, 0.9, 0.999, 1e-8);
  CHECK(state.t == 2);
  CHECK(state.m[0] == Approx(-0.055));
  CHECK(state.v[0] == Approx(0.00124975));
  CHECK(p[0] == Approx(0.9366103542).epsilon(1e-9));
}

TEST_CASE("task_loss is c * (pred - target)^2 in the model's convention", "[icl]") {
  // pred 1.5, target -0.5: (pred - target)^2 = 4; c = 1 for kAhn, 1/2 for kVladymyrov.
  CHECK(icl::task_loss(Convention::kAhn, 1.5, -0.5) == 4.0);
  CHECK(icl::task_loss(Convention::kVladymyrov, 1.5, -0.5) == 2.0);
  CHECK(icl::mean_loss(Convention::kVladymyrov, {1.5, 0.0}, {-0.5f, 1.0f}) == 1.25);
}

TEST_CASE("icl config JSON round trips and refuses unknown or repeated keys and NUL bytes", "[icl]") {
  using rill::icl::detail::config_from_json;
  using rill::icl::detail::config_to_json;
  const rill::icl::TrainConfig c = rill::icl::vladymyrov_setting(rill::icl::Parameterization::kDiag, 3.0f);
  const std::string text = config_to_json(c);
  auto back = config_from_json(text);
  REQUIRE(back.is_ok());
  CHECK(config_to_json(back.value()) == text);
  auto insert_after = [&](const std::string& anchor, const std::string& what) {
    std::string t = text;
    const size_t at = t.find(anchor);
    REQUIRE(at != std::string::npos);
    return t.insert(at + anchor.size(), what);
  };
  const std::pair<std::string, std::string> bad[] = {
      {insert_after("{", "\"extra\":1,"), "unknown key 'extra' in the config"},
      {insert_after("\"task\":{", "\"dd\":1,"), "unknown key 'dd' in task"},
      {insert_after("\"model\":{", "\"layer\":1,"), "unknown key 'layer' in model"},
      {insert_after("\"optimizer\":{", "\"lr\":1,"), "'lr' appears twice"},
      {text + std::string(1, '\0'), "NUL byte"},
  };
  for (const auto& [json, message] : bad) {
    auto r = config_from_json(json);
    INFO(json);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains(message));
  }
  // A number past float's range is refused as not finite (its conversion to float was undefined).
  std::string huge = text;
  const size_t lr = huge.find("\"lr\":");
  REQUIRE(lr != std::string::npos);
  huge.replace(lr + 5, huge.find(',', lr) - (lr + 5), "1e300");
  INFO(huge);
  CHECK_FALSE(config_from_json(huge).is_ok());
}
