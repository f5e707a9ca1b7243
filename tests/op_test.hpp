// Helpers for op tests: seeded random data, f16 rounding, tensors from host vectors, and
// comparisons against the CPU reference with a declared tolerance that report the worst element.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_test.hpp"

namespace rill_test {

// One context per kernel family ("cpu": register tiles, one subgroup per row; "gpu": shared-memory
// tiles, wide workgroups), so every device runs both.
// Under emulation (the arm64 suite) only the CPU driver's own family: the gpu family's kernels are
// the same shaders natively tested on x86-64 lavapipe, and compiling them under qemu took minutes per case.
inline std::vector<rill::Context> both_kernel_families() {
  std::vector<rill::Context> out;
  for (const char* family : {"cpu", "gpu"}) {
    if (emulated() && std::string_view(family) == "gpu") {
      WARN("the gpu kernel family left out under emulation (compile time)");
      continue;
    }
    auto options = validated_options();
    options.kernel_variant = family;
    out.push_back(make_context(options));
  }
  return out;
}

// The kernel of the one dispatch `record` puts in a sequence of ctx (read from its timings).
inline std::string kernel_of(rill::Context& ctx, const std::function<rill::Status(rill::Sequence&)>& record) {
  auto seq = ctx.sequence({.timestamps = true});
  REQUIRE(seq.is_ok());
  REQUIRE(record(*seq).is_ok());
  REQUIRE(seq->run().is_ok());
  auto timings = seq->timings();
  REQUIRE(timings.is_ok());
  REQUIRE(timings->size() == 1);
  return timings.value()[0].kernel;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// What the tensor holds after storing `v` in `dtype` (identity for f32).
inline std::vector<float> stored(const std::vector<float>& v, rill::DType dtype) {
  if (dtype != rill::DType::kF16) return v;
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = rill::half_to_float(rill::float_to_half(v[i]));
  return out;
}

inline rill::Tensor tensor_from(rill::Context& ctx, rill::DType dtype, std::vector<int64_t> shape,
                                const std::vector<float>& values, const std::string& name = {}) {
  auto t = ctx.tensor(dtype, std::move(shape), name);
  REQUIRE(t.is_ok());
  REQUIRE(ctx.upload_floats(*t, values).is_ok());
  return std::move(t).value();
}

inline rill::Tensor empty_tensor(rill::Context& ctx, rill::DType dtype, std::vector<int64_t> shape,
                                 const std::string& name = {}) {
  auto t = ctx.tensor(dtype, std::move(shape), name);
  REQUIRE(t.is_ok());
  return std::move(t).value();
}

inline std::vector<float> read(rill::Context& ctx, const rill::Tensor& t) {
  auto v = ctx.download_floats(t);
  REQUIRE(v.is_ok());
  return std::move(v).value();
}

// |got - want| <= atol + rtol * |want| for every element; reports the worst one.
inline void require_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                          const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double excess = std::fabs(double(got[i]) - want[i]) - (atol + rtol * std::fabs(double(want[i])));
    if (!(excess <= worst) || std::isnan(got[i])) {
      worst = std::isnan(got[i]) ? INFINITY : excess;
      at = i;
    }
  }
  INFO(what << ": worst element " << at << " got " << got[at] << " want " << want[at] << " (atol " << atol
            << ", rtol " << rtol << ")");
  REQUIRE(worst <= 0.0);
}

}  // namespace rill_test
