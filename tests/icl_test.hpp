// Helpers of the ICL test files: the reference model's shape and sampler settings of a TrainConfig,
// small configurations, and comparisons of results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu_test.hpp"
#include "icl.hpp"
#include "icl_sampler.hpp"
#include "rill/icl.hpp"

namespace icl_test {

inline rill::ref::icl::ModelShape ref_shape(const rill::icl::TrainConfig& c) {
  namespace ref = rill::ref::icl;
  return {.d = c.task.d,
          .n = c.task.n,
          .layers = c.model.layers,
          .heads = c.model.heads,
          .param = ref::Param(int(c.model.param)),
          .convention = ref::Convention(int(c.model.convention))};
}

inline rill::ref::icl::SamplerSpec sampler_spec(const rill::icl::TrainConfig& c, uint32_t stream_base = 0) {
  rill::ref::icl::SamplerSpec s;
  s.seed = c.seed;
  s.d = uint32_t(c.task.d);
  s.n = uint32_t(c.task.n);
  s.data_kind = uint32_t(c.task.data);
  s.noise_kind = uint32_t(c.task.noise);
  s.stream_base = stream_base;
  s.sigma_max = c.task.sigma_max;
  s.categories = c.task.categories;
  s.gamma_shape = c.task.gamma_shape;
  s.gamma_scale = c.task.gamma_scale;
  return s;
}

inline rill::icl::TrainConfig small_config(int d, int n, int layers, int heads, rill::icl::Parameterization p,
                                           rill::icl::Convention conv, int batch) {
  using rill::icl::Convention;
  rill::icl::TrainConfig c;
  c.task.d = d;
  c.task.n = n;
  c.task.noise = rill::icl::NoiseKind::kUniform;
  c.task.sigma_max = 0.5f;
  c.model = {.layers = layers,
             .heads = heads,
             .param = p,
             .convention = conv,
             .init_std = conv == Convention::kAhn ? 0.2f : 0.03f};  // no 1/n: keep deep models finite
  c.batch = batch;
  c.seed = 1234;
  c.read_every = 7;
  return c;
}

template <typename T>
T must(rill::Result<T> r) {
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline double rel_err(const std::vector<double>& want, const std::vector<float>& got) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (want[i] - got[i]) * (want[i] - got[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace icl_test
