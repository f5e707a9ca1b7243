// Kernel benchmarks for `rill bench`: one JSON record per op, variant and shape with median time,
// achieved GFLOP/s and GB/s, and the share of the device's own measured peak at that intensity.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

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
  double host_ms = 0.0;           // wall time of that run's submission, waiting included
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
};

// Records `record` into a timestamped sequence, runs it `reps` times (after a warm-up) and returns
// the median of the summed GPU time of its dispatches (host time where there are no timestamps).
rill::Result<OpTiming> time_op(rill::Context& ctx, const std::function<rill::Status(rill::Sequence&)>& record, int reps);

// Least-squares slope of log(time) against log(n) over (n, time) points; NaN for fewer than two.
double fitted_exponent(const std::vector<std::pair<double, double>>& points);

nlohmann::json op_record(const std::string& op, const std::string& variant, const nlohmann::json& shape,
                         const OpTiming& t, const rill::DevicePeaks& peaks);

// Appends records for the kernels named in `ops` (rmsnorm, ...). Returns false on an error.
bool bench_kernels(rill::Context& ctx, const std::string& ops, bool quick, const rill::DevicePeaks& peaks,
                   nlohmann::json& records);

// ICL training throughput at the papers' settings; with_torch also times the PyTorch-CPU baseline.
bool bench_icl(rill::Context& ctx, bool quick, bool with_torch, nlohmann::json& out);

// TransNormer prefill and decode against the prompt length, and a softmax-attention baseline.
struct BenchArgs;
bool bench_lm(rill::Context& ctx, const BenchArgs& args, nlohmann::json& out);

}  // namespace rill_cli
