// Compiles the kernels' random-number and task-sampling GLSL as C++ (see rill_random.glsl for the
// rules that make this exact). This file must be built with -ffp-contract=off.
#include "icl_sampler.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace rill::ref::icl {
namespace glsl {

// The GLSL built-ins and types the shared sources use. Constructors, not aggregates: the sources
// build vectors as `uvec4(a, b, c, d)`, which clang before 16 accepts only from a constructor.
using uint = uint32_t;
struct uvec2 {
  uint x = 0, y = 0;
  constexpr uvec2() = default;
  constexpr uvec2(uint x0, uint y0) : x(x0), y(y0) {}
};
struct uvec4 {
  uint x = 0, y = 0, z = 0, w = 0;
  constexpr uvec4() = default;
  constexpr uvec4(uint x0, uint y0, uint z0, uint w0) : x(x0), y(y0), z(z0), w(w0) {}
};
struct vec4 {
  float x = 0, y = 0, z = 0, w = 0;
  constexpr vec4() = default;
  constexpr vec4(float x0, float y0, float z0, float w0) : x(x0), y(y0), z(z0), w(w0) {}
  float operator[](uint i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
};
inline uint floatBitsToUint(float f) { return std::bit_cast<uint>(f); }
inline float uintBitsToFloat(uint u) { return std::bit_cast<float>(u); }
inline void umulExtended(uint a, uint b, uint& hi, uint& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint(p >> 32);
  lo = uint(p);
}

#define precise
#include "contract/icl.glsl"
#include "rill_random.glsl"

// The sampler writes through lvalue macros; here they address one task of a TaskBatch.
struct TaskWriter {
  float* task_tokens;
  float* target;
  float* task_sigma;
  uint width;
#define ICL_TOKEN(i, k) task_tokens[(i) * width + (k)]
#define ICL_TARGET (*target)
#define ICL_SIGMA (*task_sigma)
#include "rill_icl_sample.glsl"
#undef ICL_TOKEN
#undef ICL_TARGET
#undef ICL_SIGMA
};
#undef precise

}  // namespace glsl

namespace {

glsl::RillGammaParams to_glsl(const GammaConstants& g) { return {g.shape, g.scale, g.inv_shape, g.mt_d, g.mt_c}; }

}  // namespace

TaskBatch sample_tasks(const SamplerSpec& spec, uint32_t step, uint32_t first_task, uint32_t tasks) {
  glsl::TaskWriter::IclSampler s{};
  s.seed_lo = uint32_t(spec.seed);
  s.seed_hi = uint32_t(spec.seed >> 32);
  s.d = spec.d;
  s.n = spec.n;
  s.data_kind = spec.data_kind;
  s.noise_kind = spec.noise_kind;
  s.category_count = uint32_t(spec.categories.size());
  s.stream_base = spec.stream_base;
  s.sigma_max = spec.sigma_max;
  for (size_t i = 0; i < spec.categories.size() && i < glsl::kIclMaxCategories; ++i)
    s.categories[i] = spec.categories[i];
  s.gamma = to_glsl(gamma_constants(spec.gamma_shape, spec.gamma_scale));

  TaskBatch batch;
  batch.d = spec.d;
  batch.n = spec.n;
  batch.tasks = tasks;
  const size_t per_task = size_t(spec.n + 1) * (spec.d + 1);
  batch.tokens.assign(per_task * tasks, 0.0f);
  batch.targets.assign(tasks, 0.0f);
  batch.sigmas.assign(tasks, 0.0f);
  for (uint32_t t = 0; t < tasks; ++t) {
    glsl::TaskWriter w{batch.tokens.data() + per_task * t, &batch.targets[t], &batch.sigmas[t], spec.d + 1};
    w.rill_icl_sample_task(s, first_task + t, step);
  }
  return batch;
}

std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, uint64_t seed) {
  const glsl::uvec4 r = glsl::rill_philox({c[0], c[1], c[2], c[3]}, {uint32_t(seed), uint32_t(seed >> 32)});
  return {r.x, r.y, r.z, r.w};
}

std::array<float, 4> normal4(std::array<uint32_t, 4> b) {
  const glsl::vec4 v = glsl::rill_normal4({b[0], b[1], b[2], b[3]});
  return {v.x, v.y, v.z, v.w};
}

float gamma_draw(const GammaConstants& g, std::array<uint32_t, 4> c, uint64_t seed, int attempts) {
  return glsl::rill_gamma(to_glsl(g), {c[0], c[1], c[2], c[3]}, {uint32_t(seed), uint32_t(seed >> 32)}, attempts);
}

float exact_log(float x) { return glsl::rill_log(x); }
float exact_exp(float x) { return glsl::rill_exp(x); }
float exact_sqrt(float x) { return glsl::rill_sqrt(x); }

}  // namespace rill::ref::icl
