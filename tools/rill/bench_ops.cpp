// Kernel benchmarks (see bench_ops.hpp).
#include "bench_ops.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <random>

namespace rill_cli {
namespace {

rill::Tensor random_tensor(rill::Context& ctx, rill::DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  auto t = ctx.tensor(dtype, std::move(shape));
  if (!t.is_ok()) return {};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(t->element_count());
  for (float& x : v) x = dist(rng);
  if (dtype == rill::DType::kF32 || dtype == rill::DType::kF16) (void)ctx.upload_floats(*t, v);
  return std::move(t).value();
}

bool report(const rill::Status& s, const char* what) {
  if (s.is_ok()) return true;
  std::fprintf(stderr, "rill bench %s: %s\n", what, s.to_string().c_str());
  return false;
}

bool bench_rmsnorm(rill::Context& ctx, bool quick, const rill::DevicePeaks& peaks, nlohmann::json& out) {
  const int reps = quick ? 3 : 10;
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      quick ? std::vector<std::pair<int64_t, int64_t>>{{1024, 4096}} : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {16384, 256}, {64, 8192}};
  for (auto [rows, dim] : shapes) {
    for (rill::DType dtype : {rill::DType::kF32, rill::DType::kF16}) {
      const std::string suffix = dtype == rill::DType::kF32 ? "f32" : "f16";
      auto x = random_tensor(ctx, dtype, {rows, dim}, 1);
      auto g = random_tensor(ctx, dtype, {dim}, 2);
      auto dy = random_tensor(ctx, dtype, {rows, dim}, 3);
      auto y = random_tensor(ctx, dtype, {rows, dim}, 4);
      auto dx = random_tensor(ctx, dtype, {rows, dim}, 5);
      auto rstd = random_tensor(ctx, rill::DType::kF32, {rows}, 6);
      auto dg = random_tensor(ctx, rill::DType::kF32, {dim}, 7);
      const nlohmann::json shape = {{"rows", rows}, {"dim", dim}, {"dtype", suffix}};
      auto fwd = time_op(ctx, [&](rill::Sequence& s) { return rill::ops::rmsnorm_forward(s, x, &g, y, rstd); }, reps);
      if (!report(fwd.status(), "rmsnorm")) return false;
      out.push_back(op_record("rmsnorm_fwd", "", shape, fwd.value(), peaks));
      auto bwd = time_op(ctx, [&](rill::Sequence& s) { return rill::ops::rmsnorm_backward(s, x, &g, rstd, dy, dx, &dg); }, reps);
      if (!report(bwd.status(), "rmsnorm")) return false;
      out.push_back(op_record("rmsnorm_bwd", "", shape, bwd.value(), peaks));
    }
  }
  return true;
}

// Both kernel families on this device, each in its own context (the family is a context setting).
bool bench_matmul(bool quick, const rill::DevicePeaks& peaks, nlohmann::json& out) {
  const int reps = quick ? 2 : 5;
  const std::vector<std::array<int64_t, 3>> shapes =
      quick ? std::vector<std::array<int64_t, 3>>{{512, 512, 512}}
            : std::vector<std::array<int64_t, 3>>{{1024, 1024, 1024}, {4096, 256, 256}, {256, 1024, 4096}};
  for (const char* family : {"cpu", "gpu"}) {
    rill::ContextOptions options;
    options.kernel_variant = family;
    auto ctx = rill::Context::create(options);
    if (!report(ctx.status(), "matmul")) return false;
    for (const auto& [m, n, k] : shapes) {
      for (rill::DType dtype : {rill::DType::kF32, rill::DType::kF16}) {
        auto a = random_tensor(ctx.value(), dtype, {m, k}, 1);
        auto b = random_tensor(ctx.value(), dtype, {k, n}, 2);
        auto c = random_tensor(ctx.value(), dtype, {m, n}, 3);
        auto t = time_op(ctx.value(), [&](rill::Sequence& s) { return rill::ops::matmul(s, a, b, c); }, reps);
        if (!report(t.status(), "matmul")) return false;
        out.push_back(op_record("matmul", family,
                                {{"m", m}, {"n", n}, {"k", k}, {"dtype", dtype == rill::DType::kF32 ? "f32" : "f16"}},
                                t.value(), peaks));
      }
    }
  }
  return true;
}

}  // namespace

rill::Result<OpTiming> time_op(rill::Context& ctx, const std::function<rill::Status(rill::Sequence&)>& record, int reps) {
  const bool gpu_time = ctx.device().caps.timestamps;
  RILL_ASSIGN_OR_RETURN(rill::Sequence seq, ctx.sequence({.timestamps = gpu_time}));
  RILL_RETURN_IF_ERROR(record(seq));
  RILL_RETURN_IF_ERROR(seq.run());  // warm-up
  OpTiming t;
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    RILL_RETURN_IF_ERROR(seq.run());
    double m = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (gpu_time) {
      RILL_ASSIGN_OR_RETURN(auto timings, seq.timings());
      m = 0.0;
      t.flops = t.bytes = 0;
      for (const auto& d : timings) {
        m += d.gpu_ms;
        t.flops += d.flops;
        t.bytes += d.bytes;
      }
    }
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  return t;
}

nlohmann::json op_record(const std::string& op, const std::string& variant, const nlohmann::json& shape,
                         const OpTiming& t, const rill::DevicePeaks& peaks) {
  const double s = t.median_ms * 1e-3;
  const double gflops = s > 0 ? double(t.flops) / s / 1e9 : 0.0;
  const double gbps = s > 0 ? double(t.bytes) / s / 1e9 : 0.0;
  // Share of the roof at this kernel's intensity (the same rule as the profiler's roofline).
  const double intensity = t.bytes > 0 ? double(t.flops) / double(t.bytes) : 1e30;
  const double ridge = peaks.fma_f32_gflops / peaks.copy_gbps;
  const double fraction = intensity < ridge ? gbps / peaks.copy_gbps : gflops / peaks.fma_f32_gflops;
  return {{"op", op}, {"variant", variant.empty() ? "default" : variant}, {"shape", shape},
          {"median_ms", t.median_ms}, {"gflops", gflops}, {"gbps", gbps}, {"peak_fraction", fraction},
          {"bound", intensity < ridge ? "memory" : "compute"}};
}

bool bench_kernels(rill::Context& ctx, const std::string& ops, bool quick, const rill::DevicePeaks& peaks,
                   nlohmann::json& records) {
  auto wants = [&](const char* op) { return ops.empty() || ops.find(op) != std::string::npos; };
  if (wants("rmsnorm") && !bench_rmsnorm(ctx, quick, peaks, records)) return false;
  if (wants("matmul") && !bench_matmul(quick, peaks, records)) return false;
  return true;
}

}  // namespace rill_cli
