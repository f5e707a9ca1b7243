// Seeded sampling of a token from logits on the host: temperature, then top-k, then top-p
// (nucleus), renormalise, draw. The same (options, logits, step) give the same token on every
// platform: the order of candidates is a strict total order (logit descending, index ascending),
// weights are exp in double, and the uniform draw is a pure function of (seed, step).
//
// Entries that are not finite (logits should be finite; a broken model may still produce them):
//   NaN   never chosen, whatever the options.
//   +inf  when any logit is +inf, the +inf entries share all the probability equally.
//   -inf  probability zero; when every non-NaN logit is -inf they are treated as equal (the limit
//         of equal logits going to -inf), so the filters and the draw still pick among them.
//   all NaN (or no logits at all): token 0, the one answer that is always in range.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rill/lm.hpp"

namespace rill::lm {

namespace {

// splitmix64's output function (Steele, Lea, Flood 2014).
uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// Uniform in [0, 1) with 53 random bits: the output number `step` of a splitmix64 stream whose
// state starts at a hash of the seed. Nothing but (seed, step) goes in.
double uniform_draw(uint64_t seed, uint64_t step) {
  const uint64_t state = splitmix64_mix(seed + kGolden) + (step + 1) * kGolden;
  return double(splitmix64_mix(state) >> 11) * 0x1.0p-53;
}

struct Candidate {
  float logit;
  uint32_t index;
};

// Most probable first; equal logits by index. A strict total order, so any sort gives one result.
bool before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.index < b.index);
}

}  // namespace

Sampler::Sampler(SamplerOptions options) : options_(options) {}

Status Sampler::validate(const SamplerOptions& options) {
  if (!std::isfinite(options.temperature) || options.temperature < 0.0f)
    return invalid_argument("sampler: temperature must be finite and >= 0 (0: greedy), got " +
                            std::to_string(options.temperature));
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f))
    return invalid_argument("sampler: top_p must be in (0, 1] (1: off), got " + std::to_string(options.top_p));
  return Status::ok();
}

// Options that validate() rejects still give a token in range: a temperature that is not finite
// and >= 0 is greedy, top_p <= 0 or NaN keeps the single most probable token, top_p > 1 is off.
uint32_t Sampler::sample(std::span<const float> logits, uint64_t step) const {
  const size_t n = std::min<size_t>(logits.size(), std::numeric_limits<uint32_t>::max());

  // Candidates: every entry that is not NaN.
  std::vector<Candidate> candidates;
  candidates.reserve(n);
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(logits[i])) continue;
    candidates.push_back({logits[i], uint32_t(i)});
    max_logit = std::max(max_logit, logits[i]);
  }
  if (candidates.empty()) return 0;

  const float temperature = options_.temperature;
  const bool greedy = !(std::isfinite(temperature) && temperature > 0.0f) || options_.top_k == 1;
  if (greedy) return std::min_element(candidates.begin(), candidates.end(), before)->index;

  // Top-k: the k most probable, in order. Top-p needs the whole order; without filters the index
  // order is kept (the draw walks whatever order the candidates are in).
  const float top_p = std::isnan(options_.top_p) ? 0.0f : options_.top_p;
  const bool nucleus = top_p < 1.0f;
  if (options_.top_k > 0 && options_.top_k < candidates.size()) {
    std::partial_sort(candidates.begin(), candidates.begin() + options_.top_k, candidates.end(), before);
    candidates.resize(options_.top_k);
  } else if (nucleus) {
    std::sort(candidates.begin(), candidates.end(), before);
  }

  // Weights exp((x - max) / T) in double; the limits for +inf and all -inf as in the file header.
  std::vector<double> weights(candidates.size());
  const double max_x = double(max_logit);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const float x = candidates[i].logit;
    if (std::isinf(max_logit))
      weights[i] = x == max_logit ? 1.0 : 0.0;
    else
      weights[i] = std::exp((double(x) - max_x) / double(temperature));
  }
  double total = 0.0;
  for (double w : weights) total += w;

  // Top-p: the shortest prefix (most probable first) whose mass reaches top_p of the total; always
  // at least one token. Comparing against top_p * total renormalises without dividing.
  size_t kept = candidates.size();
  if (nucleus) {
    const double target = std::max(0.0, double(top_p)) * total;
    double mass = 0.0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      mass += weights[i];
      if (mass >= target) {
        kept = i + 1;
        break;
      }
    }
    total = mass;
  }

  // The draw: the first candidate whose running mass passes u * total (zero weights never do).
  const double threshold = uniform_draw(options_.seed, step) * total;
  double mass = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < kept; ++i) {
    if (weights[i] <= 0.0) continue;
    mass += weights[i];
    last_positive = i;
    if (mass > threshold) return candidates[i].index;
  }
  return candidates[last_positive].index;  // rounding left the threshold at the very top
}

}  // namespace rill::lm
