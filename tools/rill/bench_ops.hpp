// Kernel benchmarks for `rill bench`: one JSON record per op, variant and shape with median time,
// achieved GFLOP/s and GB/s, and the share of the device's own measured peak at that intensity.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "rill/lm.hpp"
#include "rill/rill.hpp"

namespace rill_cli {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// `n` tokens below `vocab` from a fixed xorshift sequence: the same prompt in every run.
std::vector<uint32_t> random_prompt(uint64_t n, uint32_t vocab);

struct OpTiming {
  double median_ms = 0.0;
  double fastest_ms = 0.0;        // the fastest run: on a shared, noisy machine the kernel's own speed
  double host_ms = 0.0;           // wall time of a run's submission, waiting included (the runs' median)
  bool gpu_clock = false;         // median_ms is the GPU's time (timestamps), not host_ms
  // The GPU's time from the first dispatch's start to the last one's end, gaps between dispatches
  // included (the runs' median): what a CUDA peer's events around its call measure.
  double span_ms = 0.0;
  uint64_t flops = 0, bytes = 0;  // declared by the op's dispatches, per run
  // GPU milliseconds and dispatches per kernel in the median run (empty without timestamps): which
  // pass of a multi-pass op dominates.
  struct Kernel {
    uint32_t calls = 0;
    double ms = 0.0;
    uint32_t pipeline = 0;  // of its longest dispatch
    double longest_ms = 0.0;
    // That pipeline's compiler statistics (ContextOptions::pipeline_statistics; empty when not captured).
    std::vector<rill::PipelineStatistic> compiler;
  };
  std::map<std::string, Kernel> kernels;
  // RILL_BENCH_COMPARE_PLAN: the same op recorded under that kernel plan, run alternately with it.
  std::shared_ptr<OpTiming> compare;
  std::string compare_plan;
};

// GPUs lower their clocks within milliseconds of idling (the host generating a large input, or a
// PyTorch peer's process, is idle enough) and need sustained load to raise them again: on the H200,
// ops timed a few runs straight after such a pause ran 2-5x slower than the same dispatches timed
// after others. So on GPUs `run` repeats until the device has been busy for RILL_BENCH_WARMUP_MS
// (default 300; 0 turns it off), before any run is timed. CPU drivers run on the host's own clocks,
// so their figures stay as before: `run` is not called there.
rill::Status keep_gpu_busy(const rill::Context& ctx, const std::function<rill::Status()>& run);
// Whether `s` is OK; otherwise prints "rill bench <what>: <status>" to stderr.
bool report(const rill::Status& s, const char* what);
// RILL_BENCH_REPS: the fewest repetitions of every timed op (a noisy machine's A/B comparisons);
// 0 when unset, InvalidArgument naming it for anything but a whole number from 1 to 100000.
rill::Result<int> bench_reps_from_env();

// Records `record` into a timestamped sequence, runs it `reps` times (after a warm-up) and returns
// the median of the summed GPU time of its dispatches (host time where there are no timestamps).
// With RILL_BENCH_COMPARE_PLAN set, also records it under that kernel plan's choices laid over the
// context's own plan, and runs the two alternately: OpTiming::compare.
rill::Result<OpTiming> time_op(rill::Context& ctx, const std::function<rill::Status(rill::Sequence&)>& record, int reps);

// Least-squares slope of log(time) against log(n) over (n, time) points; NaN for fewer than two.
double fitted_exponent(const std::vector<std::pair<double, double>>& points);

// The compute roof a record's peak_fraction is judged against: the f32 FMA peak (every kernel but
// the cooperative-matrix matmul computes in f32, f16 storage or not), or none measured (cooperative
// matrices run on units no probe measures: the fraction is null).
enum class ComputeRoof { kF32, kNone };

nlohmann::json op_record(const std::string& op, const std::string& variant, const nlohmann::json& shape,
                         const OpTiming& t, const rill::DevicePeaks& peaks, ComputeRoof roof = ComputeRoof::kF32);

// Appends records for the kernels named in `ops` (rmsnorm, ...), linear attention in the options'
// forms only and matmul at their shapes. Returns false on an error.
struct KernelBenchOptions {
  bool quick = false;
  std::string la_forms;       // linear_attention: comma-separated forms; empty: every form
  std::vector<std::array<int64_t, 3>> matmul_shapes;  // matmul: {m, n, k} each; empty: the bench's own
};
bool bench_kernels(rill::Context& ctx, const std::string& ops, const KernelBenchOptions& options,
                   const rill::DevicePeaks& peaks, nlohmann::json& records);

// The items of a comma-separated list, empty ones included ("" gives one empty item), so that a
// stray comma is reported as an unknown name rather than skipped.
std::vector<std::string> comma_items(const std::string& list);

// An error message naming the first of the comma-separated `forms` that is not a linear-attention
// form rill bench times; empty when all are known.
std::string unknown_linear_attention_form(const std::string& forms);

// The products of the comma-separated `MxNxK` items (C [M, N] = A [M, K] B [K, N]), or an error
// message naming the first malformed one (each dimension 1 to 2^20, at most 2^31 elements a matrix).
std::variant<std::vector<std::array<int64_t, 3>>, std::string> parse_matmul_shapes(const std::string& shapes);

// ICL training throughput at the papers' settings; with_torch also times the PyTorch-CPU baseline.
bool bench_icl(rill::Context& ctx, bool quick, bool with_torch, nlohmann::json& out);

// TransNormer prefill and decode against the prompt length, and a softmax-attention baseline: the
// model and prompt lengths from the options (read and checked before any work: a bad --lm-config
// must not come after minutes of other ops' records), then the timings.
struct BenchArgs;
struct LmBenchSetup {
  rill::lm::ModelConfig config;
  std::vector<uint64_t> lengths;  // the prompt lengths timed
  rill::lm::ModelOptions options;
};
rill::Result<LmBenchSetup> lm_bench_setup(const BenchArgs& args);
bool bench_lm(rill::Context& ctx, const BenchArgs& args, const LmBenchSetup& setup, nlohmann::json& out);

}  // namespace rill_cli
