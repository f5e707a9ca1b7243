// Profiling: what each kernel costs on this device and how far it is from what the device can do.
//
// Profiling is off by default and free when off (no timestamp queries are recorded). Turn it on
// with ContextOptions::profile_path or the RILL_PROFILE environment variable: every sequence then
// records per-dispatch GPU timestamps, and the context writes a Chrome trace-event JSON (open it in
// Perfetto or chrome://tracing) with a GPU track and a host track, and a per-kernel summary next to
// it (<path>.summary.txt), when it is destroyed or on Context::write_profile().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/export.hpp"
#include "rill/status.hpp"
#include "rill/types.hpp"

namespace rill {

class Context;

// The device's own ceilings, measured by microbenchmarks (bench/fma_f32, bench/fma_f16,
// bench/copy_vec4) and cached per device and driver.
struct DevicePeaks {
  double fma_f32_gflops = 0.0;
  double fma_f16_gflops = 0.0;  // 0 when the device has no f16 arithmetic
  double copy_gbps = 0.0;       // bytes read + bytes written per second
  double dispatch_latency_us = 0.0;  // host submit to completion of one tiny dispatch
  std::string device;
};

struct PeakOptions {
  bool quick = false;      // fewer and smaller repetitions (read from the cache, never written to it)
  bool use_cache = true;   // read the cache, and write it after measuring
  bool refresh = false;    // measure even when cached (the cache is still written)
  // Default: $RILL_CACHE_DIR, else $XDG_CACHE_HOME/rill, else ~/.cache/rill (Windows:
  // %LOCALAPPDATA%/rill/cache); none of them: no cache (never a folder other users share).
  std::string cache_dir;
};

RILL_API Result<DevicePeaks> device_peaks(Context& context, const PeakOptions& options = {});
// Cached peaks only; NotFound when nothing is cached for this device.
RILL_API Result<DevicePeaks> cached_device_peaks(Context& context, const std::string& cache_dir = {});
// GPU milliseconds (host where the device has no timestamps; best of `reps`) of the copy kernel
// behind copy_gbps moving `bytes` (half read, half written) in one dispatch: what a memory-bound op
// of that size is compared with where a dispatch's fixed cost outweighs its transfer.
RILL_API Result<double> copy_ms(Context& context, uint64_t bytes, int reps = 5);

// One event of the trace. Times in microseconds on the host's steady clock.
struct ProfileEvent {
  enum class Track { kHost, kGpu };
  Track track = Track::kHost;
  std::string name;      // kernel label, "vkQueueSubmit", "create pipeline", ...
  std::string category;  // "dispatch", "submit", "wait", "pipeline", "transfer"
  double start_us = 0.0;
  double duration_us = 0.0;
  // Dispatch events only.
  std::string kernel;
  std::string variant;
  uint32_t groups[3] = {0, 0, 0};
  uint64_t flops = 0;  // as the dispatch declared for its shape
  uint64_t bytes = 0;
  uint32_t replays = 1;  // a batch of N replays is timed on its last replay and counted N times
  // Dispatch and pipeline-creation events: the pipeline's id, unique in the process (a trace merges
  // the events of every context profiling to its path). Creation events also carry the driver's
  // compiler statistics where they were captured.
  uint32_t pipeline = 0;
  std::vector<PipelineStatistic> statistics;
};

struct KernelSummary {
  std::string kernel;
  std::string variant;
  uint64_t calls = 0;
  double total_ms = 0.0, mean_ms = 0.0, p50_ms = 0.0, p95_ms = 0.0;
  double gflops = 0.0, gbps = 0.0;  // achieved, over the total time
  double intensity = 0.0;           // FLOPs per byte (0 when bytes are not declared)
  // achieved / min(peak FLOP/s, intensity * peak bandwidth); 0 if unknown. The peak FLOP/s is f32
  // FMA's, f16 FMA's for the f16 probe, none measured for cooperative-matrix kernels (0 then).
  double roofline_fraction = 0.0;
  // The compiler statistics of the kernel's pipeline with the most GPU time (empty when none were captured).
  std::vector<PipelineStatistic> statistics;
};

// Per kernel, most total time first. `peaks` may be null (no roofline share then).
RILL_API std::vector<KernelSummary> summarize_profile(const std::vector<ProfileEvent>& events, const DevicePeaks* peaks);
RILL_API std::string format_profile_summary(const std::vector<KernelSummary>& kernels, const DevicePeaks* peaks);
RILL_API std::string chrome_trace_json(const std::vector<ProfileEvent>& events, const std::string& device,
                                       const DevicePeaks* peaks);
// Reads the events back from a trace written by rill (for `rill profile`).
RILL_API Result<std::vector<ProfileEvent>> parse_chrome_trace(const std::string& json_text);
// A roofline plot: each kernel a point of arithmetic intensity against achieved FLOP/s under the
// measured compute and bandwidth roofs (log-log).
RILL_API std::string roofline_svg(const std::vector<KernelSummary>& kernels, const DevicePeaks& peaks);

}  // namespace rill
