// One random linear-regression task for in-context learning, drawn from counter-based random
// numbers keyed by (seed, step, task, element) so any batch can be regenerated anywhere.
//
// Like rill_random.glsl this is compiled both as GLSL (shaders/icl/icl_sample.comp) and as C++
// (engine/ref/icl_sampler.cpp), so the CPU reference sees the very same floats. The includer
// defines three lvalue macros for the current task: ICL_TOKEN(i, k) (token i < n + 1, feature
// k < d + 1; the query token is i = n, the label is k = d), ICL_TARGET and ICL_SIGMA.
//
// The task (both papers' generators):
//   w ~ N(0, I_d);  x_i ~ N(0, I_d) (data_kind 0) or x_i = sqrt(r2_i) u_i with u_i uniform on the
//   sphere and r2_i ~ Gamma(shape, scale) per token (data_kind 1);
//   sigma = 0 (noise_kind 0), ~ U(0, sigma_max) (1) or uniform over `categories` (2);
//   context label y_i = <w, x_i> + sigma eps_i, eps_i ~ N(0, 1); the query's label slot is 0 and
//   its noise-free label <w, x_q> is the target.
#ifndef RILL_ICL_SAMPLE_GLSL
#define RILL_ICL_SAMPLE_GLSL

#include "contract/icl.glsl"  // kIclMaxCategories (a C++ includer includes it first, at namespace scope)
#include "rill_random.glsl"

#define RILL_ICL_GAMMA_ATTEMPTS 16

struct IclSampler {
  uint seed_lo;
  uint seed_hi;
  uint d;
  uint n;
  uint data_kind;   // 0 gaussian, 1 heavy-tailed (sphere times sqrt(Gamma))
  uint noise_kind;  // 0 none, 1 uniform(0, sigma_max), 2 categorical
  uint category_count;
  uint stream_base;  // 0 for training batches; other values give independent streams (evaluation)
  float sigma_max;
  float categories[kIclMaxCategories];
  RillGammaParams gamma;
};

// Streams (counter word w, plus stream_base) of the draws of one task.
#define RILL_ICL_STREAM_W 0u
#define RILL_ICL_STREAM_X 1u
#define RILL_ICL_STREAM_RADIUS 2u
#define RILL_ICL_STREAM_NOISE 3u

uvec4 rill_icl_bits(IclSampler s, uint stream, uint index, uint task, uint step) {
  return rill_philox(uvec4(index, task, step, s.stream_base + stream), uvec2(s.seed_lo, s.seed_hi));
}

// The pieces below are shared by the two drivers that follow: a whole task per invocation (CPU
// drivers and the CPU twin) and one token per invocation (GPUs). Both do the same operations in
// the same order for every token, so they give the same bits.

// Token i's input: four normals per Philox call written straight into the token slots, scaled
// onto the sphere times sqrt(r2) for heavy tails; its label slot starts at 0.
void rill_icl_draw_input(IclSampler s, uint task, uint step, uint i) {
  const uint d = s.d;
  const uint chunks = (d + 3u) / 4u;
  precise float sum_sq = 0.0f;
  for (uint c = 0u; c < chunks; ++c) {
    vec4 g = rill_normal4(rill_icl_bits(s, RILL_ICL_STREAM_X, i * chunks + c, task, step));
    for (uint j = 0u; j < 4u; ++j) {
      uint k = 4u * c + j;
      if (k < d) {
        ICL_TOKEN(i, k) = g[j];
        sum_sq = sum_sq + g[j] * g[j];
      }
    }
  }
  if (s.data_kind == 1u) {
    // Heavy tails: a direction uniform on the sphere times sqrt(r2), r2 ~ Gamma per token.
    uvec4 ctr = uvec4(i * uint(RILL_ICL_GAMMA_ATTEMPTS), task, step, s.stream_base + RILL_ICL_STREAM_RADIUS);
    float r2 = rill_gamma(s.gamma, ctr, uvec2(s.seed_lo, s.seed_hi), RILL_ICL_GAMMA_ATTEMPTS);
    precise float factor = sum_sq > 0.0f ? rill_sqrt(r2) * rill_rsqrt(sum_sq) : 0.0f;
    for (uint k = 0u; k < d; ++k) {
      precise float scaled = ICL_TOKEN(i, k) * factor;
      ICL_TOKEN(i, k) = rill_flush_denormal(scaled);
    }
  }
  ICL_TOKEN(i, d) = 0.0f;
}

// w's entries 4c .. 4c + 3.
vec4 rill_icl_weights(IclSampler s, uint task, uint step, uint c) {
  return rill_normal4(rill_icl_bits(s, RILL_ICL_STREAM_W, c, task, step));
}

// A label's partial sum y plus w_k x_ik. Tiny radii make tiny inputs: the product and the sum are
// flushed (see rill_random.glsl). Callers keep y in a register across terms: a label slot read and
// written per term cost lavapipe a storage access loop each (a fifth of the sampler's time).
float rill_icl_label_term(float y, float w_k, float x_ik) {
  precise float wx = w_k * x_ik;
  precise float sum = y + rill_flush_denormal(wx);
  return rill_flush_denormal(sum);
}

// The task's noise level.
float rill_icl_sigma(IclSampler s, uint task, uint step) {
  uvec4 noise0 = rill_icl_bits(s, RILL_ICL_STREAM_NOISE, 0u, task, step);
  precise float sigma = 0.0f;
  if (s.noise_kind == 1u) {
    precise float level = s.sigma_max * rill_uniform_from_zero(noise0.x);
    sigma = rill_flush_denormal(level);
  } else if (s.noise_kind == 2u) {
    precise float scaled = float(noise0.x >> 8u) * 5.9604644775390625e-8f * float(s.category_count);
    uint pick = uint(int(scaled));
    sigma = s.categories[pick < s.category_count ? pick : s.category_count - 1u];
  }
  return sigma;
}

// sigma eps_i added to context token i's label (i < n).
void rill_icl_add_noise(uint i, uint d, float sigma, float eps) {
  precise float noise = sigma * eps;
  precise float y = ICL_TOKEN(i, d) + rill_flush_denormal(noise);
  ICL_TOKEN(i, d) = rill_flush_denormal(y);
}

// A whole task: inputs, then labels y_i = <w, x_i> accumulated in increasing k, then the noise;
// the query keeps its clean label as the target.
void rill_icl_sample_task(IclSampler s, uint task, uint step) {
  const uint d = s.d;
  const uint token_count = s.n + 1u;
  const uint chunks = (d + 3u) / 4u;
  for (uint i = 0u; i < token_count; ++i) rill_icl_draw_input(s, task, step, i);
  // w's four entries of a chunk, then every token's terms of them, in increasing k.
  for (uint c = 0u; c < chunks; ++c) {
    vec4 w = rill_icl_weights(s, task, step, c);
    for (uint i = 0u; i < token_count; ++i) {
      precise float y = ICL_TOKEN(i, d);
      for (uint j = 0u; j < 4u; ++j) {
        uint k = 4u * c + j;
        if (k < d) y = rill_icl_label_term(y, w[j], ICL_TOKEN(i, k));
      }
      ICL_TOKEN(i, d) = y;
    }
  }
  float sigma = rill_icl_sigma(s, task, step);
  ICL_SIGMA = sigma;
  ICL_TARGET = ICL_TOKEN(s.n, d);
  ICL_TOKEN(s.n, d) = 0.0f;
  if (s.noise_kind != 0u) {
    for (uint c = 0u; c * 4u < s.n; ++c) {
      vec4 eps = rill_normal4(rill_icl_bits(s, RILL_ICL_STREAM_NOISE, 1u + c, task, step));
      for (uint j = 0u; j < 4u; ++j) {
        uint i = 4u * c + j;
        if (i < s.n) rill_icl_add_noise(i, d, sigma, eps[j]);
      }
    }
  }
}

// Token i of a task alone (i <= n): the same draws and sums as rill_icl_sample_task makes for it.
// w and sigma are drawn again by every token, which costs less than leaving a GPU idle: token 0
// writes sigma, the query token the target.
void rill_icl_sample_token(IclSampler s, uint task, uint step, uint i) {
  const uint d = s.d;
  const uint chunks = (d + 3u) / 4u;
  rill_icl_draw_input(s, task, step, i);
  precise float y = 0.0f;
  for (uint c = 0u; c < chunks; ++c) {
    vec4 w = rill_icl_weights(s, task, step, c);
    for (uint j = 0u; j < 4u; ++j) {
      uint k = 4u * c + j;
      if (k < d) y = rill_icl_label_term(y, w[j], ICL_TOKEN(i, k));
    }
  }
  ICL_TOKEN(i, d) = y;
  float sigma = rill_icl_sigma(s, task, step);
  if (i == 0u) ICL_SIGMA = sigma;
  if (i == s.n) {
    ICL_TARGET = ICL_TOKEN(s.n, d);
    ICL_TOKEN(s.n, d) = 0.0f;
  } else if (s.noise_kind != 0u) {
    vec4 eps = rill_normal4(rill_icl_bits(s, RILL_ICL_STREAM_NOISE, 1u + i / 4u, task, step));
    rill_icl_add_noise(i, d, sigma, eps[i % 4u]);
  }
}

#endif  // RILL_ICL_SAMPLE_GLSL
