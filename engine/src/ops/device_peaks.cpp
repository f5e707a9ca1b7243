// Device peaks: FMA throughput (f32, f16 where the device has f16 math), copy bandwidth and
// dispatch latency, measured with the engine's own dispatch path (the bench/ kernels) and cached
// per device and driver (profile/peaks_cache.cpp).
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/host_memory_guard.hpp"
#include "core/log.hpp"
#include "ops/op_common.hpp"
#include "profile/peaks_cache.hpp"
#include "rill/context.hpp"
#include "rill/profile.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill {
namespace {

constexpr uint32_t kFmaIterations = 512;
constexpr double kFmaFlopsPerIteration = 8 * 4 * 2;  // 8 vec4 chains, 2 FLOPs per FMA

// Best (shortest) GPU time of one dispatch over `reps` runs; host time where there are no timestamps.
Result<double> best_ms(Context& ctx, const Dispatch& d, int reps) {
  const bool gpu_time = ctx.device().caps.timestamps;
  RILL_ASSIGN_OR_RETURN(Sequence seq, ctx.sequence({.timestamps = gpu_time}));
  RILL_RETURN_IF_ERROR(seq.dispatch(d));
  RILL_RETURN_IF_ERROR(seq.run());  // warm-up: pipeline, first touch of memory
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    RILL_RETURN_IF_ERROR(seq.run());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (gpu_time) {
      RILL_ASSIGN_OR_RETURN(auto timings, seq.timings());
      ms = timings.at(0).gpu_ms;
    }
    best = std::min(best, ms);
  }
  return best;
}

// 256 invocations per workgroup, or the device's most (Vulkan guarantees 128).
uint32_t peak_workgroup(const Context& ctx) { return std::min(256u, ctx.device().caps.max_workgroup_invocations); }

Result<double> fma_gflops(Context& ctx, const char* kernel, uint32_t invocations, int reps) {
  RILL_ASSIGN_OR_RETURN(Tensor out, ctx.tensor(DType::kF32, {int64_t(invocations) * 4}, "peak_fma_out"));
  const gpu::SeedPush push{0.5f};
  const uint32_t wg = peak_workgroup(ctx), groups = invocations / wg;
  const double flops = double(groups) * wg * kFmaIterations * kFmaFlopsPerIteration;
  Dispatch d{.kernel = kernel,
             .bindings = {&out},
             .push = push_bytes(push),
             .groups = {groups, 1, 1},
             .spec = {gpu::spec("WG_SIZE", wg)},
             .flops = uint64_t(flops),
             .bytes = 16ull * groups * wg};
  RILL_ASSIGN_OR_RETURN(double ms, best_ms(ctx, d, reps));
  return flops / (ms * 1e-3) / 1e9;
}

// Best time of the copy kernel over vec4s vectors of 4 floats (32 bytes moved each).
Result<double> copy_vec4_ms(Context& ctx, uint32_t vec4s, int reps) {
  RILL_ASSIGN_OR_RETURN(Tensor src, ctx.tensor(DType::kF32, {int64_t(vec4s) * 4}, "peak_copy_src"));
  RILL_ASSIGN_OR_RETURN(Tensor dst, ctx.tensor(DType::kF32, {int64_t(vec4s) * 4}, "peak_copy_dst"));
  const gpu::CountPush push{vec4s};
  Dispatch d{.kernel = "bench/copy_vec4",
             .bindings = {&src, &dst},
             .push = push_bytes(push),
             .groups = ops::detail::groups_for(vec4s, peak_workgroup(ctx)),  // past 65535 groups into y
             .spec = {gpu::spec("WG_SIZE", peak_workgroup(ctx))},
             .bytes = 32ull * vec4s};
  return best_ms(ctx, d, reps);
}

Result<double> copy_gbps(Context& ctx, uint32_t vec4s, int reps) {
  RILL_ASSIGN_OR_RETURN(double ms, copy_vec4_ms(ctx, vec4s, reps));
  return 32.0 * vec4s / (ms * 1e-3) / 1e9;
}

Result<double> dispatch_latency_us(Context& ctx, int reps) {
  RILL_ASSIGN_OR_RETURN(Tensor out, ctx.tensor(DType::kU32, {1}, "peak_latency_out"));
  RILL_ASSIGN_OR_RETURN(Sequence seq, ctx.sequence());
  RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "bench/noop", .bindings = {&out}}));
  RILL_RETURN_IF_ERROR(seq.run());
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    RILL_RETURN_IF_ERROR(seq.run());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

Result<double> copy_ms(Context& ctx, uint64_t bytes, int reps) {
  return detail::host_memory_guarded("copy_ms", [&]() -> Result<double> {
    const uint64_t vec4s = std::max<uint64_t>(1, (bytes + 31) / 32);
    if (vec4s > UINT32_MAX)
      return invalid_argument("copy_ms: " + std::to_string(bytes) + " bytes is more than one copy");
    return copy_vec4_ms(ctx, uint32_t(vec4s), std::max(reps, 1));
  });
}

Result<DevicePeaks> cached_device_peaks(Context& ctx, const std::string& cache_dir) {
  return detail::host_memory_guarded("device peaks",
                                     [&] { return detail::read_cached_peaks(ctx.device(), cache_dir); });
}

namespace {

Result<DevicePeaks> measure_device_peaks(Context& ctx, const PeakOptions& options) {
  if (options.use_cache && !options.refresh) {
    auto cached = cached_device_peaks(ctx, options.cache_dir);
    if (cached.is_ok()) return cached;
    // A missing cache is normal; a damaged one is replaced by the fresh measurement, with a word.
    if (cached.status().code() != StatusCode::kNotFound)
      log_warning("measuring the device peaks again: " + cached.status().message());
  }
  const bool quick = options.quick;
  const int reps = quick ? 3 : 7;
  // Enough invocations to fill every core or compute unit several times over.
  const uint32_t fma_invocations = quick ? (1u << 15) : (1u << 17);
  DevicePeaks p;
  p.device = ctx.device().name;
  RILL_ASSIGN_OR_RETURN(p.fma_f32_gflops, fma_gflops(ctx, "bench/fma_f32", fma_invocations, reps));
  if (ctx.device().caps.float16_arithmetic) {
    RILL_ASSIGN_OR_RETURN(p.fma_f16_gflops, fma_gflops(ctx, "bench/fma_f16", fma_invocations, reps));
  }
  // 64 MiB each way, quick or not (a quick 16 MiB each fitted an H100's 50 MB L2, which then served
  // the copy): larger than the last-level caches of the GPUs rill targets, within every device's
  // storage-buffer range (2^27 bytes on many phones). An MI300X's 256 MB cache would hold it.
  RILL_ASSIGN_OR_RETURN(p.copy_gbps, copy_gbps(ctx, 1u << 22, reps));
  RILL_ASSIGN_OR_RETURN(p.dispatch_latency_us, dispatch_latency_us(ctx, quick ? 20 : 100));
  // Peaks measured under profiling carry its overhead (forced timestamps), and quick ones fill a big
  // GPU only in part: neither is cached (a full measurement would be served them).
  if (options.use_cache && !ctx.profiling() && !quick) {
    detail::write_cached_peaks(ctx.device(), options.cache_dir, p);
  }
  return p;
}

}  // namespace

Result<DevicePeaks> device_peaks(Context& ctx, const PeakOptions& options) {
  return detail::host_memory_guarded("device peaks", [&] { return measure_device_peaks(ctx, options); });
}

}  // namespace rill
