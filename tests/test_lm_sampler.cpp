// The LM sampler on the host (no GPU): greedy and its ties, top-k and top-p supports, empirical
// frequencies against softmax(logits / T) (renormalised after the filters), determinism in
// (seed, step), non-finite logits, and option validation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "rill/lm.hpp"

namespace {

using rill::lm::Sampler;
using rill::lm::SamplerOptions;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Fixed pseudo-random logits in [-4, 4) (a tiny LCG: the same on every platform).
std::vector<float> test_logits(size_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1u;
  for (float& x : out) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1u << 24) * 8.0f - 4.0f;
  }
  return out;
}

// softmax(logits / T) restricted to `support`, renormalised; zero elsewhere.
std::vector<double> expected_probabilities(const std::vector<float>& logits, float temperature,
                                           const std::set<uint32_t>& support) {
  double max_x = -1e300;
  for (uint32_t i : support) max_x = std::max(max_x, double(logits[i]));
  std::vector<double> p(logits.size(), 0.0);
  double total = 0;
  for (uint32_t i : support) total += p[i] = std::exp((double(logits[i]) - max_x) / temperature);
  for (double& v : p) v /= total;
  return p;
}

std::vector<double> frequencies(const Sampler& sampler, const std::vector<float>& logits, uint64_t steps) {
  std::vector<double> f(logits.size(), 0.0);
  for (uint64_t step = 0; step < steps; ++step) {
    const uint32_t token = sampler.sample(logits, step);
    REQUIRE(token < logits.size());
    f[token] += 1.0 / double(steps);
  }
  return f;
}

// Each frequency within 5 standard deviations of a binomial proportion, plus a little slack.
void check_frequencies(const std::vector<double>& f, const std::vector<double>& p, uint64_t steps) {
  for (size_t i = 0; i < p.size(); ++i) {
    INFO("token " << i << ": expected " << p[i] << ", observed " << f[i]);
    if (p[i] == 0.0) {
      CHECK(f[i] == 0.0);
    } else {
      CHECK(std::abs(f[i] - p[i]) <= 5.0 * std::sqrt(p[i] * (1.0 - p[i]) / double(steps)) + 1e-3);
    }
  }
}

}  // namespace

TEST_CASE("lm sampler: temperature 0 is argmax, lowest index on ties, NaN skipped", "[lm][sampler]") {
  const Sampler greedy({.temperature = 0.0f, .seed = 5});
  CHECK(greedy.sample(std::vector<float>{0.1f, 2.0f, -1.0f, 1.9f}, 0) == 1);
  CHECK(greedy.sample(std::vector<float>{0.5f, 3.0f, 3.0f, 3.0f}, 7) == 1);
  CHECK(greedy.sample(std::vector<float>{kNaN, -2.0f, kNaN, -1.0f}, 0) == 3);
  CHECK(greedy.sample(std::vector<float>{-5.0f}, 123) == 0);
  const std::vector<float> logits = test_logits(300, 1);
  const uint32_t argmax = uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (uint64_t step = 0; step < 50; ++step) CHECK(greedy.sample(logits, step) == argmax);
}

TEST_CASE("lm sampler: top_k = 1 is greedy at any temperature", "[lm][sampler]") {
  const std::vector<float> logits = test_logits(257, 2);
  const Sampler greedy({.temperature = 0.0f});
  for (float temperature : {0.1f, 1.0f, 5.0f}) {
    const Sampler k1({.temperature = temperature, .top_k = 1, .top_p = 0.9f, .seed = 11});
    for (uint64_t step = 0; step < 200; ++step) CHECK(k1.sample(logits, step) == greedy.sample(logits, step));
  }
}

TEST_CASE("lm sampler: top_k never leaves the k most probable tokens", "[lm][sampler]") {
  const std::vector<float> logits = test_logits(256, 3);
  for (uint32_t k : {2u, 5u, 40u}) {
    std::vector<uint32_t> order(logits.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
    const std::set<uint32_t> top(order.begin(), order.begin() + k);
    // A high temperature flattens the distribution: without the filter most draws would fall outside.
    const Sampler sampler({.temperature = 8.0f, .top_k = k, .seed = k});
    std::set<uint32_t> seen;
    for (uint64_t step = 0; step < 4000; ++step) {
      const uint32_t token = sampler.sample(logits, step);
      INFO("k " << k << " step " << step << " token " << token);
      REQUIRE(top.count(token) == 1);
      seen.insert(token);
    }
    CHECK(seen.size() == k);  // and every one of them is reachable
  }
}

TEST_CASE("lm sampler: top_p keeps the smallest most-probable set reaching p", "[lm][sampler]") {
  // Probabilities 0.4, 0.3, 0.2, 0.1 at T = 1.
  const std::vector<float> logits = {std::log(0.2f), std::log(0.4f), std::log(0.1f), std::log(0.3f)};
  const uint64_t steps = 20000;
  {
    const Sampler sampler({.top_p = 0.6f, .seed = 1});  // 0.4 < 0.6 <= 0.4 + 0.3
    check_frequencies(frequencies(sampler, logits, steps), expected_probabilities(logits, 1.0f, {1, 3}), steps);
  }
  {
    const Sampler sampler({.top_p = 0.85f, .seed = 2});  // 0.7 < 0.85 <= 0.9
    check_frequencies(frequencies(sampler, logits, steps), expected_probabilities(logits, 1.0f, {0, 1, 3}), steps);
  }
  {
    const Sampler sampler({.temperature = 3.0f, .top_p = 1e-6f, .seed = 3});  // always at least one token
    for (uint64_t step = 0; step < 500; ++step) CHECK(sampler.sample(logits, step) == 1);
  }
}

TEST_CASE("lm sampler: frequencies follow softmax(logits / T)", "[lm][sampler]") {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.0f, 1.5f, 0.2f};
  const uint64_t steps = 20000;
  std::set<uint32_t> all;
  for (uint32_t i = 0; i < logits.size(); ++i) all.insert(i);
  for (float temperature : {0.7f, 1.0f, 2.5f}) {
    INFO("temperature " << temperature);
    const Sampler sampler({.temperature = temperature, .seed = 42});
    check_frequencies(frequencies(sampler, logits, steps), expected_probabilities(logits, temperature, all), steps);
  }
  // top-k then top-p, renormalised: k = 4 keeps {3, 6, 0, 1}; at T = 1 their shares are about
  // 0.46, 0.28, 0.17, 0.10 of that set, so p = 0.8 keeps {3, 6, 0}.
  INFO("top_k 4, top_p 0.8");
  const Sampler filtered({.temperature = 1.0f, .top_k = 4, .top_p = 0.8f, .seed = 9});
  check_frequencies(frequencies(filtered, logits, steps), expected_probabilities(logits, 1.0f, {3, 6, 0}), steps);
}

TEST_CASE("lm sampler: the draw depends only on (seed, step)", "[lm][sampler]") {
  const std::vector<float> logits = test_logits(256, 4);
  const SamplerOptions options{.temperature = 1.5f, .top_k = 50, .top_p = 0.95f, .seed = 77};
  const Sampler a(options), b(options);
  std::vector<uint32_t> forward, backward(100);
  for (uint64_t step = 0; step < 100; ++step) forward.push_back(a.sample(logits, step));
  for (uint64_t step = 100; step-- > 0;) backward[step] = b.sample(logits, step);  // another order, another object
  CHECK(forward == backward);
  CHECK(a.sample(logits, 1ull << 40) == b.sample(logits, 1ull << 40));

  // Pinned (and checked against an independent Python transcription of the draw): a change here
  // changes what every saved session samples next. Flat logits: token = floor(16 u).
  const Sampler pinned({.temperature = 1.0f, .seed = 2024});
  const std::vector<float> flat(16, 0.0f);
  std::vector<uint32_t> tokens;
  for (uint64_t step = 0; step < 12; ++step) tokens.push_back(pinned.sample(flat, step));
  const std::vector<uint32_t> expected = {9, 4, 2, 9, 1, 15, 3, 0, 12, 12, 14, 14};
  CHECK(tokens == expected);
}

TEST_CASE("lm sampler: different seeds give different draws", "[lm][sampler]") {
  const std::vector<float> flat(256, 0.0f);  // uniform: two streams agree on 1 step in 256
  const Sampler s1({.seed = 1}), s2({.seed = 2});
  int differ = 0;
  for (uint64_t step = 0; step < 200; ++step) differ += s1.sample(flat, step) != s2.sample(flat, step);
  CHECK(differ > 180);
}

TEST_CASE("lm sampler: non-finite logits", "[lm][sampler]") {
  const Sampler sampler({.temperature = 1.0f, .seed = 3});
  std::set<uint32_t> seen;
  // NaN is never chosen; -inf has probability zero.
  for (uint64_t step = 0; step < 2000; ++step) {
    const uint32_t t = sampler.sample(std::vector<float>{kNaN, 0.0f, -kInf, 0.0f, kNaN}, step);
    REQUIRE((t == 1 || t == 3));
    seen.insert(t);
  }
  CHECK(seen.size() == 2);
  // +inf entries share everything.
  seen.clear();
  for (uint64_t step = 0; step < 2000; ++step)
    seen.insert(sampler.sample(std::vector<float>{kInf, 5.0f, kNaN, kInf}, step));
  CHECK(seen == std::set<uint32_t>{0, 3});
  // Every non-NaN logit -inf: they count as equal; all NaN (or nothing): token 0.
  seen.clear();
  for (uint64_t step = 0; step < 2000; ++step)
    seen.insert(sampler.sample(std::vector<float>{kNaN, -kInf, -kInf}, step));
  CHECK(seen == std::set<uint32_t>{1, 2});
  CHECK(Sampler({.temperature = 0.0f}).sample(std::vector<float>{kNaN, -kInf, -kInf}, 0) == 1);
  CHECK(sampler.sample(std::vector<float>{kNaN, kNaN}, 0) == 0);
  CHECK(sampler.sample(std::vector<float>{}, 0) == 0);
}

TEST_CASE("lm sampler: validate rejects bad options, naming the field", "[lm][sampler]") {
  CHECK(Sampler::validate({}).is_ok());
  CHECK(Sampler::validate({.temperature = 0.0f, .top_k = 1, .top_p = 1.0f}).is_ok());
  CHECK(Sampler::validate({.temperature = 100.0f, .top_k = 1000000, .top_p = 1e-9f}).is_ok());
  for (float t : {-0.5f, kNaN, kInf, -kInf}) {
    const rill::Status s = Sampler::validate({.temperature = t});
    CHECK(s.code() == rill::StatusCode::kInvalidArgument);
    CHECK(s.message().find("temperature") != std::string::npos);
  }
  for (float p : {0.0f, -0.1f, 1.01f, kNaN, kInf}) {
    const rill::Status s = Sampler::validate({.top_p = p});
    CHECK(s.code() == rill::StatusCode::kInvalidArgument);
    CHECK(s.message().find("top_p") != std::string::npos);
  }
  // Unvalidated options still give a token in range.
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f};
  CHECK(Sampler({.temperature = kNaN}).sample(logits, 0) == 1);
  CHECK(Sampler({.temperature = -1.0f}).sample(logits, 0) == 1);
  CHECK(Sampler({.top_p = 0.0f}).sample(logits, 0) == 1);
  CHECK(Sampler({.top_p = kNaN}).sample(logits, 0) == 1);
  CHECK(Sampler({.top_p = 7.0f}).sample(logits, 0) < 3);
}
