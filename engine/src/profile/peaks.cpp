// Device peaks: FMA throughput (f32, f16 where the device has f16 math), copy bandwidth and
// dispatch latency, measured with the engine's own dispatch path and cached per device + driver.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "core/file_io.hpp"
#include "core/json_keys.hpp"
#include "core/log.hpp"
#include "platform/files.hpp"
#include "profile/peaks_cache.hpp"
#include "rill/context.hpp"
#include "rill/profile.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill {
namespace {

constexpr uint32_t kFmaIterations = 512;
constexpr double kFmaFlopsPerIteration = 8 * 4 * 2;  // 8 vec4 chains, 2 FLOPs per FMA

std::string cache_directory(const std::string& dir) {
  if (!dir.empty()) return dir;
  if (const char* d = std::getenv("RILL_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/rill";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/rill";
  if (const char* a = std::getenv("LOCALAPPDATA"); a && *a) return std::string(a) + "/rill/cache";  // Windows
  std::error_code ec;
  return platform::utf8_from_path(std::filesystem::temp_directory_path(ec) / "rill-cache");
}

std::string cache_file(const DeviceInfo& d, const std::string& dir) {
  char name[160];
  std::snprintf(name, sizeof name, "/peaks-%04x-%04x-%08x.json", d.vendor_id, d.device_id, d.driver_version);
  return cache_directory(dir) + name;
}

// Best effort: a cache that cannot be written is measured again next time.
void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(platform::path_from_utf8(path), ec);
}

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
             .spec = {spec_uint("WG_SIZE", wg)},
             .flops = uint64_t(flops),
             .bytes = 16ull * groups * wg};
  RILL_ASSIGN_OR_RETURN(double ms, best_ms(ctx, d, reps));
  return flops / (ms * 1e-3) / 1e9;
}

Result<double> copy_gbps(Context& ctx, uint32_t vec4s, int reps) {
  RILL_ASSIGN_OR_RETURN(Tensor src, ctx.tensor(DType::kF32, {int64_t(vec4s) * 4}, "peak_copy_src"));
  RILL_ASSIGN_OR_RETURN(Tensor dst, ctx.tensor(DType::kF32, {int64_t(vec4s) * 4}, "peak_copy_dst"));
  const gpu::CountPush push{vec4s};
  Dispatch d{.kernel = "bench/copy_vec4",
             .bindings = {&src, &dst},
             .push = push_bytes(push),
             .groups = {(vec4s + peak_workgroup(ctx) - 1) / peak_workgroup(ctx), 1, 1},
             .spec = {spec_uint("WG_SIZE", peak_workgroup(ctx))},
             .bytes = 32ull * vec4s};
  RILL_ASSIGN_OR_RETURN(double ms, best_ms(ctx, d, reps));
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

namespace detail {

Result<DevicePeaks> read_cached_peaks(const DeviceInfo& device, const std::string& cache_dir) {
  const std::string path = cache_file(device, cache_dir);
  RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path, 1 << 16));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (auto dup = first_duplicate_key(text)) return data_loss("peaks cache '" + path + "' has the key '" + *dup + "' twice");
  try {
    const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    DevicePeaks p;
    p.device = j.at("device").get<std::string>();
    p.fma_f32_gflops = j.at("fma_f32_gflops").get<double>();
    p.fma_f16_gflops = j.at("fma_f16_gflops").get<double>();
    p.copy_gbps = j.at("copy_gbps").get<double>();
    p.dispatch_latency_us = j.at("dispatch_latency_us").get<double>();
    // Each figure finite and within what any device could measure (a datacenter GPU is ~1e5 GFLOP/s).
    auto within = [](double v, double low, double high) { return std::isfinite(v) && v >= low && v <= high; };
    if (!within(p.fma_f32_gflops, 1e-3, 1e7) || !within(p.fma_f16_gflops, 0.0, 1e7) ||
        !within(p.copy_gbps, 1e-3, 1e6) || !within(p.dispatch_latency_us, 0.0, 1e7) || p.device != device.name)
      return data_loss("peaks cache '" + path + "' holds implausible values");
    return p;
  } catch (const nlohmann::json::exception& e) {
    return data_loss("peaks cache '" + path + "' is malformed: " + e.what());
  }
}

}  // namespace detail

Result<DevicePeaks> cached_device_peaks(Context& ctx, const std::string& cache_dir) {
  return detail::read_cached_peaks(ctx.device(), cache_dir);
}

Result<DevicePeaks> device_peaks(Context& ctx, const PeakOptions& options) {
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
  // Larger than any last-level cache, so the copy measures memory.
  RILL_ASSIGN_OR_RETURN(p.copy_gbps, copy_gbps(ctx, quick ? (1u << 20) : (1u << 22), reps));
  RILL_ASSIGN_OR_RETURN(p.dispatch_latency_us, dispatch_latency_us(ctx, quick ? 20 : 100));
  // Peaks measured under profiling carry its overhead (forced timestamps): not worth caching.
  if (options.use_cache && !ctx.profiling()) {
    const std::string path = cache_file(ctx.device(), options.cache_dir);
    make_dirs(cache_directory(options.cache_dir));
    const nlohmann::json j = {{"device", p.device}, {"fma_f32_gflops", p.fma_f32_gflops},
                              {"fma_f16_gflops", p.fma_f16_gflops}, {"copy_gbps", p.copy_gbps},
                              {"dispatch_latency_us", p.dispatch_latency_us}};
    const std::string text = j.dump(2);
    // A cache that cannot be written is not an error: the peaks are still returned.
    (void)write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }
  return p;
}

}  // namespace rill
