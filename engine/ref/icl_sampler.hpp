// CPU twin of the GPU task sampler: the same counter-based draws, compiled from the same source
// (shaders/include/rill_icl_sample.glsl), so the CPU reference regenerates any GPU batch exactly.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace rill::ref::icl {

// Mirrors IclSampler in rill_icl_sample.glsl; see there for the meaning of each field.
struct SamplerSpec {
  uint64_t seed = 0;
  uint32_t d = 1, n = 1;
  uint32_t data_kind = 0;   // 0 gaussian, 1 heavy-tailed
  uint32_t noise_kind = 0;  // 0 none, 1 uniform(0, sigma_max), 2 categorical
  uint32_t stream_base = 0;
  float sigma_max = 0.0f;
  std::vector<float> categories;  // noise_kind 2: at most 6 values
  float gamma_shape = 0.1f, gamma_scale = 10.0f;
};

// The float constants both samplers use, derived once on the host (the engine's dispatch includes
// this header too, so GPU and CPU get the very same floats). See RillGammaParams.
struct GammaConstants {
  float shape, scale, inv_shape, mt_d, mt_c;
};
inline GammaConstants gamma_constants(float shape, float scale) {
  const float boosted = shape < 1.0f ? shape + 1.0f : shape;
  const float d = boosted - 1.0f / 3.0f;
  return {shape, scale, 1.0f / shape, d, float(1.0 / std::sqrt(9.0 * double(d)))};
}

// One batch in the reference layout: tokens[task][i][k] (i < n + 1, k < d + 1), targets[task],
// sigmas[task]. Task t of the batch is task index first_task + t.
struct TaskBatch {
  uint32_t d = 0, n = 0, tasks = 0;
  std::vector<float> tokens, targets, sigmas;
};
TaskBatch sample_tasks(const SamplerSpec& spec, uint32_t step, uint32_t first_task, uint32_t tasks);

// The raw generators, exposed for the bit-exactness tests.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> counter, uint64_t seed);
std::array<float, 4> normal4(std::array<uint32_t, 4> bits);
float gamma_draw(const GammaConstants& g, std::array<uint32_t, 4> counter, uint64_t seed, int attempts);
float exact_log(float x);
float exact_exp(float x);
float exact_sqrt(float x);

}  // namespace rill::ref::icl
