// Per-kernel summary of a profile: calls, time percentiles, achieved throughput, roofline share.
#include <algorithm>
#include <cstdio>
#include <map>

#include "rill/profile.hpp"

namespace rill {
namespace {

double percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const size_t i = static_cast<size_t>(q * double(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// The compute peak a kernel is judged against: f32 FMA for every kernel that computes in f32 (f16
// storage or not), f16 FMA for the probe that computes in f16, none for cooperative-matrix kernels,
// whose units no probe measures (as `rill bench` records them). 0: none.
double compute_peak(const std::string& kernel, const DevicePeaks& peaks) {
  if (kernel.find("coop") != std::string::npos) return 0.0;
  if (kernel == "bench/fma_f16") return peaks.fma_f16_gflops;
  return peaks.fma_f32_gflops;
}

}  // namespace

std::vector<KernelSummary> summarize_profile(const std::vector<ProfileEvent>& events, const DevicePeaks* peaks) {
  struct Acc {
    std::vector<double> ms;  // one entry per call
    double total_ms = 0.0;
    double flops = 0.0, bytes = 0.0;
    uint64_t calls = 0;
    std::map<uint32_t, double> ms_by_pipeline;
  };
  std::map<std::pair<std::string, std::string>, Acc> by_kernel;
  std::map<uint32_t, const std::vector<PipelineStatistic>*> statistics;  // by pipeline id
  for (const ProfileEvent& e : events) {
    if (e.category == "pipeline" && e.pipeline != 0 && !e.statistics.empty()) statistics[e.pipeline] = &e.statistics;
    if (e.track != ProfileEvent::Track::kGpu || e.kernel.empty()) continue;
    Acc& a = by_kernel[{e.kernel, e.variant}];
    const double ms = e.duration_us / 1e3;
    // Replays of one batch are timed once; count each replay with that time (capped for memory).
    for (uint32_t r = 0; r < std::min<uint32_t>(e.replays, 4096); ++r) a.ms.push_back(ms);
    a.calls += e.replays;
    a.total_ms += ms * e.replays;
    a.flops += double(e.flops) * e.replays;
    a.bytes += double(e.bytes) * e.replays;
    a.ms_by_pipeline[e.pipeline] += ms * e.replays;
  }
  std::vector<KernelSummary> out;
  for (auto& [key, a] : by_kernel) {
    KernelSummary k;
    k.kernel = key.first;
    k.variant = key.second;
    k.calls = a.calls;
    k.total_ms = a.total_ms;
    k.mean_ms = a.calls ? a.total_ms / double(a.calls) : 0.0;
    std::sort(a.ms.begin(), a.ms.end());
    k.p50_ms = percentile(a.ms, 0.50);
    k.p95_ms = percentile(a.ms, 0.95);
    const double seconds = a.total_ms / 1e3;
    if (seconds > 0) {
      k.gflops = a.flops / seconds / 1e9;
      k.gbps = a.bytes / seconds / 1e9;
    }
    k.intensity = a.bytes > 0 ? a.flops / a.bytes : 0.0;
    const double compute = peaks ? compute_peak(k.kernel, *peaks) : 0.0;
    if (peaks && peaks->copy_gbps > 0 && (a.flops > 0 ? compute > 0 : a.bytes > 0)) {
      // The roof at this intensity; kernels that declare only bytes are judged on bandwidth.
      const double roof = a.flops > 0 ? std::min(compute, k.intensity * peaks->copy_gbps) : peaks->copy_gbps;
      const double achieved = a.flops > 0 ? k.gflops : k.gbps;
      k.roofline_fraction = roof > 0 ? achieved / roof : 0.0;
    }
    const auto most = std::max_element(a.ms_by_pipeline.begin(), a.ms_by_pipeline.end(),
                                       [](const auto& x, const auto& y) { return x.second < y.second; });
    if (most != a.ms_by_pipeline.end()) {
      const auto found = statistics.find(most->first);
      if (found != statistics.end()) k.statistics = *found->second;
    }
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const KernelSummary& a, const KernelSummary& b) { return a.total_ms > b.total_ms; });
  return out;
}

std::string format_profile_summary(const std::vector<KernelSummary>& kernels, const DevicePeaks* peaks) {
  std::string out;
  char line[512];
  if (peaks) {
    std::snprintf(line, sizeof line, "device peaks: %.1f GFLOP/s f32 FMA, %.1f GFLOP/s f16 FMA, %.1f GB/s copy, %.1f us dispatch\n",
                  peaks->fma_f32_gflops, peaks->fma_f16_gflops, peaks->copy_gbps, peaks->dispatch_latency_us);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-28s %-8s %7s %10s %9s %9s %9s %9s %9s %7s %6s\n", "kernel", "variant", "calls",
                "total ms", "mean ms", "p50 ms", "p95 ms", "GB/s", "GFLOP/s", "FLOP/B", "roof");
  out += line;
  for (const KernelSummary& k : kernels) {
    char roof[16] = "-";
    if (k.roofline_fraction > 0) std::snprintf(roof, sizeof roof, "%.0f%%", 100.0 * k.roofline_fraction);
    std::snprintf(line, sizeof line, "%-28s %-8s %7llu %10.3f %9.4f %9.4f %9.4f %9.2f %9.2f %7.2f %6s\n",
                  k.kernel.c_str(), k.variant.c_str(), static_cast<unsigned long long>(k.calls), k.total_ms, k.mean_ms,
                  k.p50_ms, k.p95_ms, k.gbps, k.gflops, k.intensity, roof);
    out += line;
  }
  if (kernels.empty()) out += "(no GPU dispatches were timed)\n";
  bool header = false;
  for (const KernelSummary& k : kernels) {
    if (k.statistics.empty()) continue;
    if (!header) out += "\ncompiler statistics (the driver's, of each kernel's pipeline with the most GPU time):\n";
    header = true;
    out += k.kernel + " (" + k.variant + "):";
    for (const PipelineStatistic& s : k.statistics) {
      std::snprintf(line, sizeof line, " %s %g;", s.name.c_str(), s.value);
      out += line;
    }
    out.back() = '\n';
  }
  return out;
}

}  // namespace rill
