// Kernel benchmarks (see bench_ops.hpp).
#include "bench_ops.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "median.hpp"

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

// The forms of causal linear attention the bench times, in order (--la-forms selects).
constexpr const char* kLinearAttentionForms[] = {"chunked_parallel", "chunked_serial", "scan", "recurrent", "naive"};

// GPUs (thousands of GFLOP/s, against lavapipe's ~70) get shapes worth timing: longer sequences,
// bigger products, a tighter time budget for the slow reference forms.
bool large_device(const rill::DevicePeaks& peaks) { return peaks.fma_f32_gflops >= 2000.0; }

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
      // Next to each: one copy dispatch moving the bytes the op must (forward: x in, y out; backward:
      // x and dy in, dx out), the fair floor where a dispatch's fixed cost outweighs the transfer.
      const uint64_t row_bytes = uint64_t(rows) * dim * rill::dtype_size(dtype);
      auto with_copy = [&](nlohmann::json record, uint64_t bytes) -> bool {
        auto copy = rill::copy_ms(ctx, bytes, reps);
        if (!report(copy.status(), "rmsnorm copy")) return false;
        record["copy_same_bytes_ms"] = *copy;
        record["copy_same_bytes_ratio"] = *copy / record["median_ms"].get<double>();
        out.push_back(std::move(record));
        return true;
      };
      auto fwd = time_op(ctx, [&](rill::Sequence& s) { return rill::ops::rmsnorm_forward(s, x, &g, y, rstd); }, reps);
      if (!report(fwd.status(), "rmsnorm")) return false;
      if (!with_copy(op_record("rmsnorm_fwd", "", shape, fwd.value(), peaks), 2 * row_bytes)) return false;
      auto bwd = time_op(ctx, [&](rill::Sequence& s) { return rill::ops::rmsnorm_backward(s, x, &g, rstd, dy, dx, &dg); }, reps);
      if (!report(bwd.status(), "rmsnorm")) return false;
      if (!with_copy(op_record("rmsnorm_bwd", "", shape, bwd.value(), peaks), 3 * row_bytes)) return false;
    }
  }
  return true;
}

// Both kernel families on this device, each in its own context (the family is a context setting).
// `given`: the shapes to time ({m, n, k}); empty: the bench's own.
bool bench_matmul(bool quick, const std::vector<std::array<int64_t, 3>>& given, const rill::DevicePeaks& peaks,
                  nlohmann::json& out) {
  const int reps = quick ? 2 : 5;
  std::vector<std::array<int64_t, 3>> shapes = given;  // {m, n, k}
  if (shapes.empty()) {
    shapes = quick ? std::vector<std::array<int64_t, 3>>{{512, 512, 512}}
                   : std::vector<std::array<int64_t, 3>>{{1024, 1024, 1024}, {4096, 256, 256}, {256, 1024, 4096}};
    if (large_device(peaks)) {  // 4096^3 and the LM's projections over 64K tokens (256 -> 512 and back)
      shapes.push_back({4096, 4096, 4096});
      shapes.push_back({65536, 512, 256});
      shapes.push_back({65536, 256, 512});
    }
  }
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
        // f16 runs on cooperative matrices where the plan takes them (or where the kernels went
        // untimed on a device that has them: then unknown), else f32 math on f16 storage.
        bool coop =
            dtype == rill::DType::kF16 && t->kernels.empty() && ctx->device().caps.cooperative_matrix_f16[0] != 0;
        for (const auto& [name, kernel] : t->kernels)  // the emulated form computes in plain f32
          coop = coop || (name.find("coop") != std::string::npos && name.find("emulated") == std::string::npos);
        const ComputeRoof roof = coop ? ComputeRoof::kNone : ComputeRoof::kF32;
        out.push_back(op_record("matmul", family,
                                {{"m", m}, {"n", n}, {"k", k}, {"dtype", dtype == rill::DType::kF32 ? "f32" : "f16"}},
                                t.value(), peaks, roof));
      }
    }
  }
  return true;
}

// Causal linear attention, H = 4, D = 64: the chunked form parallel over chunks (C = 64, what GPUs
// run), the chunked form serial over chunks (the fallback for GPUs without room for a window), the
// register scan (what CPU drivers run), naive quadratic, and recurrent (the serial chunked kernel one
// position at a time, i.e. chunks of 1). Sequences longer than one segment run as segments that
// continue the state, as a long prefill does, so memory stays bounded. Then the non-causal forward
// and the causal backward.
bool bench_linear_attention(bool quick, const std::string& la_forms, const rill::DevicePeaks& peaks,
                            nlohmann::json& out) {
  const std::vector<std::string> selected = comma_items(la_forms);
  auto timed_form = [&](const std::string& form) {
    return la_forms.empty() || std::find(selected.begin(), selected.end(), form) != selected.end();
  };
  // Each form in its own context; RILL_KERNEL_PLAN's other choices (la_tile=32, ...) still apply
  // (its own linear_attention choice gives way: a key may be named once).
  const char* env_plan = std::getenv("RILL_KERNEL_PLAN");
  std::string others;
  for (const std::string& item : comma_items(env_plan != nullptr ? env_plan : ""))
    if (item.rfind("linear_attention=", 0) != 0) others += item + ",";
  rill::ContextOptions parallel_options, serial_options, scan_options;
  parallel_options.kernel_plan = others + "linear_attention=parallel";
  serial_options.kernel_plan = others + "linear_attention=serial";
  scan_options.kernel_plan = others + "linear_attention=scan";
  std::map<std::string, rill::Context> contexts;
  for (const auto& [name, options] : {std::pair<const char*, rill::ContextOptions*>{"parallel", &parallel_options},
                                      {"serial", &serial_options},
                                      {"scan", &scan_options}}) {
    auto ctx = rill::Context::create(*options);
    if (!report(ctx.status(), "linear_attention")) return false;
    contexts.emplace(name, std::move(ctx).value());
  }
  const bool large = large_device(peaks);
  const int64_t segment = 65536;
  std::vector<int64_t> lengths =
      quick ? std::vector<int64_t>{1024, 4096, 16384} : std::vector<int64_t>{1024, 4096, 16384, 65536, 262144};
  if (large && !quick) lengths.push_back(1048576);
  // Skip a form whose next length would take longer than this.
  const double budget_ms = quick ? 5e3 : large ? 1e3 : 60e3;
  std::map<std::string, std::vector<std::pair<double, double>>> curves;
  // {heads, head dim}: the kernels' shape; on GPUs also the default LM's (H8 D32), parallel form only.
  std::vector<std::pair<int64_t, int64_t>> head_shapes = {{4, 64}};
  if (large) head_shapes.push_back({8, 32});
  for (const auto& [heads, d] : head_shapes)
    for (const char* form : kLinearAttentionForms) {
      const std::string f = form;
      if ((heads != 4 && f != "chunked_parallel") || !timed_form(f)) continue;
      rill::Context& ctx = contexts.at(f == "chunked_parallel" ? "parallel" : f == "scan" ? "scan" : "serial");
      double last_ms = 0.0;
      int64_t last_n = 0;
      const double growth = f == "naive" ? 2.0 : 1.0;  // predicted time exponent
      for (int64_t n : lengths) {
        if (last_ms > 0 && last_ms * std::pow(double(n) / double(last_n), growth) > budget_ms) {
          out.push_back({{"op", "linear_attention_causal"},
                         {"variant", form},
                         {"shape", {{"n", n}, {"heads", heads}}},
                         {"skipped", "predicted to exceed the time budget"}});
          continue;
        }
        const int64_t seg = std::min(n, f == "naive" ? n : segment);
        auto q = random_tensor(ctx, rill::DType::kF32, {1, heads, seg, d}, 1);
        auto k = random_tensor(ctx, rill::DType::kF32, {1, heads, seg, d}, 2);
        auto v = random_tensor(ctx, rill::DType::kF32, {1, heads, seg, d}, 3);
        auto o = random_tensor(ctx, rill::DType::kF32, {1, heads, seg, d}, 4);
        auto state = random_tensor(ctx, rill::DType::kF32, {1, heads, d, d}, 5);
        if (!q.valid() || !o.valid())
          return report(rill::resource_exhausted("tensor allocation failed"), "linear_attention");
        const uint32_t chunk = f == "recurrent" ? 1 : 64;
        auto t = time_op(
            ctx,
            [&](rill::Sequence& s) -> rill::Status {
              if (f == "naive") return rill::ops::linear_attention_naive(s, q, k, v, o);
              for (int64_t done = 0; done < n; done += seg)
                RILL_RETURN_IF_ERROR(rill::ops::linear_attention_forward(s, q, k, v, o, state,
                                                                         {.chunk = chunk, .continue_state = done > 0}));
              return rill::Status::ok();
            },
            quick ? 1 : 3);
        if (!report(t.status(), "linear_attention")) return false;
        out.push_back(op_record("linear_attention_causal", form, {{"n", n}, {"heads", heads}, {"dk", d}, {"dv", d}},
                                t.value(), peaks));
        std::fprintf(stderr, "linear_attention_causal %s H%lld D%lld N %lld: %.3f ms\n", form, (long long)heads,
                     (long long)d, (long long)n, t->median_ms);
        last_ms = t->median_ms;
        last_n = n;
        if (n >= 4096 && heads == 4) curves[form].push_back({double(n), t->median_ms});
      }
    }
  for (const auto& [form, points] : curves) {
    if (points.size() < 2) continue;
    out.push_back({{"op", "linear_attention_causal"}, {"variant", form},
                   {"fitted_time_exponent", fitted_exponent(points)},
                   {"fit_range", {points.front().first, points.back().first}}});
  }
  // The non-causal forward and the causal backward (what training runs), in each algorithm. One
  // segment each; lengths past the time budget are skipped.
  std::vector<int64_t> short_lengths =
      quick ? std::vector<int64_t>{1024} : std::vector<int64_t>{1024, 4096, 16384, 65536};
  if (large && !quick) short_lengths.push_back(262144);
  const int64_t heads = 4, d = 64;
  for (const char* form : {"chunked_parallel", "chunked_serial", "scan"}) {
    const std::string f = form;
    if (!timed_form(f)) continue;
    rill::Context& ctx = contexts.at(f == "chunked_parallel" ? "parallel" : f == "scan" ? "scan" : "serial");
    for (const char* op : {"linear_attention_noncausal", "linear_attention_causal_bwd"}) {
      const bool backward = std::string(op) == "linear_attention_causal_bwd";
      double last_ms = 0.0;
      int64_t last_n = 0;
      for (int64_t n : short_lengths) {
        if (last_ms > 0 && last_ms * double(n) / double(last_n) > budget_ms) {
          out.push_back({{"op", op},
                         {"variant", form},
                         {"shape", {{"n", n}}},
                         {"skipped", "predicted to exceed the time budget"}});
          continue;
        }
        std::vector<rill::Tensor> t;  // q, k, v, o (d_o), state (scratch), dq, dk, dv
        for (uint32_t i = 0; i < 8; ++i)
          t.push_back(random_tensor(
              ctx, rill::DType::kF32,
              i == 4 ? std::vector<int64_t>{1, heads, d, d} : std::vector<int64_t>{1, heads, n, d}, i + 1));
        for (const rill::Tensor& x : t)
          if (!x.valid()) return report(rill::resource_exhausted("tensor allocation failed"), op);
        auto timing = time_op(
            ctx,
            [&](rill::Sequence& s) -> rill::Status {
              if (backward)
                return rill::ops::linear_attention_backward(s, t[0], t[1], t[2], t[3], t[5], t[6], t[7], t[4]);
              return rill::ops::linear_attention_forward(s, t[0], t[1], t[2], t[3], t[4], {.causal = false});
            },
            quick ? 1 : 3);
        if (!report(timing.status(), op)) return false;
        out.push_back(op_record(op, form, {{"n", n}, {"heads", heads}, {"dk", d}, {"dv", d}}, timing.value(), peaks));
        std::fprintf(stderr, "%s %s N %lld: %.3f ms\n", op, form, (long long)n, timing->median_ms);
        last_ms = timing->median_ms;
        last_n = n;
      }
    }
  }
  return true;
}

bool bench_block_attention(rill::Context& ctx, bool quick, const rill::DevicePeaks& peaks, nlohmann::json& out) {
  const int64_t heads = 4, n = quick ? 4096 : 16384;
  // Block 64 and heads of 64 in f32 and f16; on GPUs also the rest of issue 12's range in f32
  // (blocks 32-256, heads 32-128), whose goal is every shape of it.
  struct Shape {
    int64_t block, d;
    rill::DType dtype;
    bool optional;  // a shape the device may refuse (recorded as skipped)
  };
  std::vector<Shape> shapes = {{64, 64, rill::DType::kF32, false}, {64, 64, rill::DType::kF16, false}};
  if (ctx.kernel_family() == "gpu" && !quick)
    for (const auto& [block, d] : {std::pair<int64_t, int64_t>{32, 64}, {128, 64}, {256, 64}, {64, 32}, {64, 128}})
      shapes.push_back({block, d, rill::DType::kF32, true});
  for (const auto& [block, d, dtype, optional] : shapes) {
    auto q = random_tensor(ctx, dtype, {1, heads, n, d}, 1);
    auto k = random_tensor(ctx, dtype, {1, heads, n, d}, 2);
    auto v = random_tensor(ctx, dtype, {1, heads, n, d}, 3);
    auto o = random_tensor(ctx, dtype, {1, heads, n, d}, 4);
    auto lse = random_tensor(ctx, rill::DType::kF32, {1, heads, n}, 5);
    for (bool causal : {true, false}) {
      const rill::ops::BlockAttentionOptions opt{.block = uint32_t(block), .causal = causal};
      auto t = time_op(
          ctx, [&](rill::Sequence& s) { return rill::ops::block_attention_forward(s, q, k, v, o, lse, opt); },
          quick ? 2 : 5);
      const nlohmann::json shape = {{"n", n},
                                    {"heads", heads},
                                    {"d", d},
                                    {"block", block},
                                    {"dtype", dtype == rill::DType::kF32 ? "f32" : "f16"}};
      const rill::StatusCode refused = t.is_ok() ? rill::StatusCode::kOk : t.status().code();
      if (optional && (refused == rill::StatusCode::kOutOfRange || refused == rill::StatusCode::kInvalidArgument)) {
        // A device limit (a CPU driver's loop limit, forced to the GPU kernels, stops block 256; a
        // phone's workgroup limit stops it too): recorded, not timed.
        out.push_back({{"op", "block_attention_fwd"},
                       {"variant", causal ? "causal" : "non-causal"},
                       {"shape", shape},
                       {"skipped", t.status().message()}});
        continue;
      }
      if (!report(t.status(), "block_attention")) return false;
      out.push_back(op_record("block_attention_fwd", causal ? "causal" : "non-causal", shape, t.value(), peaks));
      // The backward (dq, dk and dv from dO) of the forward just timed, whose o and lse it reads.
      std::vector<rill::Tensor> g;  // d_o, dq, dk, dv, delta
      for (int i = 0; i < 4; ++i) g.push_back(random_tensor(ctx, dtype, {1, heads, n, d}, uint32_t(6 + i)));
      g.push_back(random_tensor(ctx, rill::DType::kF32, {1, heads, n}, 10));
      auto bwd = time_op(
          ctx,
          [&](rill::Sequence& s) {
            return rill::ops::block_attention_backward(s, q, k, v, o, lse, g[0], g[1], g[2], g[3], g[4], opt);
          },
          quick ? 2 : 5);
      if (!report(bwd.status(), "block_attention_bwd")) return false;
      out.push_back(op_record("block_attention_bwd", causal ? "causal" : "non-causal", shape, bwd.value(), peaks));
    }
  }
  return true;
}

}  // namespace

// Least-squares slope of log(time) against log(n).
double fitted_exponent(const std::vector<std::pair<double, double>>& points) {
  if (points.size() < 2) return NAN;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [n, ms] : points) {
    const double x = std::log(n), y = std::log(ms);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double k = double(points.size());
  return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}

rill::Result<int> bench_reps_from_env() {
  const char* env = std::getenv("RILL_BENCH_REPS");
  if (env == nullptr || *env == '\0') return 0;
  const std::string_view text = env;
  int asked = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), asked);
  // Text or a sign would be read as 0 repetitions by atoi: the default, silently.
  if (ec != std::errc() || end != text.data() + text.size() || text.front() < '0' || text.front() > '9' || asked < 1 ||
      asked > 100000)
    return rill::invalid_argument("RILL_BENCH_REPS='" + std::string(env) +
                                  "': a number of repetitions from 1 to 100000");
  return asked;
}

bool report(const rill::Status& s, const char* what) {
  if (s.is_ok()) return true;
  std::fprintf(stderr, "rill bench %s: %s\n", what, s.to_string().c_str());
  return false;
}

rill::Status keep_gpu_busy(const rill::Context& ctx, const std::function<rill::Status()>& run) {
  double warmup_ms = 300.0;
  if (const char* env = std::getenv("RILL_BENCH_WARMUP_MS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    warmup_ms = std::strtod(env, &end);
    // "inf" would warm up for ever, text silently not at all.
    if (*end != '\0' || !(warmup_ms >= 0.0 && warmup_ms <= 600000.0))
      return rill::invalid_argument("RILL_BENCH_WARMUP_MS='" + std::string(env) +
                                    "': a number of milliseconds from 0 to 600000");
  }
  if (ctx.device().type == rill::DeviceType::kCpu) return rill::Status::ok();
  const auto t0 = Clock::now();
  while (ms_since(t0) < warmup_ms) RILL_RETURN_IF_ERROR(run());
  return rill::Status::ok();
}

namespace {

// One timed run of `seq`: the summed GPU time of its dispatches (host time without timestamps)
// and each kernel's, or named pass's, share.
rill::Result<OpTiming> timed_run(rill::Sequence& seq, bool gpu_time) {
  OpTiming run;
  const auto t0 = std::chrono::steady_clock::now();
  RILL_RETURN_IF_ERROR(seq.run());
  run.host_ms = run.median_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!gpu_time) return run;
  RILL_ASSIGN_OR_RETURN(auto timings, seq.timings());
  run.gpu_clock = true;
  run.median_ms = 0.0;
  for (const auto& d : timings) {
    run.median_ms += d.gpu_ms;
    run.span_ms = std::max(run.span_ms, d.start_ms + d.gpu_ms);
    run.flops += d.flops;
    run.bytes += d.bytes;
    OpTiming::Kernel& k = run.kernels[d.label];  // the kernel's name unless the op names the pass
    ++k.calls;
    k.ms += d.gpu_ms;
    if (d.gpu_ms >= k.longest_ms) {
      k.longest_ms = d.gpu_ms;
      k.pipeline = d.pipeline;
    }
  }
  return run;
}

// The median run of `runs` (of an even count, the faster middle one's kernels), with the runs'
// medians, the fastest one's time and the median run's compiler statistics.
OpTiming median_of(rill::Context& ctx, std::vector<OpTiming> runs) {
  std::sort(runs.begin(), runs.end(), [](const OpTiming& a, const OpTiming& b) { return a.median_ms < b.median_ms; });
  OpTiming median = runs[(runs.size() - 1) / 2];
  median.fastest_ms = runs.front().median_ms;
  // The runs' median GPU time, wall time and GPU span, each on its own (the run of the median GPU
  // time need not have them).
  auto median_by = [&](double OpTiming::*field) {
    std::vector<double> values;
    for (const OpTiming& r : runs) values.push_back(r.*field);
    return rill_cli::median(std::move(values));
  };
  median.median_ms = median_by(&OpTiming::median_ms);
  median.host_ms = median_by(&OpTiming::host_ms);
  median.span_ms = median_by(&OpTiming::span_ms);
  for (auto& [name, k] : median.kernels) {
    if (auto stats = ctx.pipeline_statistics(k.pipeline); stats.is_ok()) k.compiler = std::move(stats).value();
  }
  return median;
}

// The items of kernel plan `base` whose keys `over` does not name, then `over`'s.
std::string plan_over(const std::string& base, const std::string& over) {
  auto key = [](const std::string& item) { return item.substr(0, item.find('=')); };
  std::vector<std::string> keys;
  for (const std::string& item : comma_items(over)) keys.push_back(key(item));
  std::string plan;
  for (const std::string& item : comma_items(base))
    if (!item.empty() && std::find(keys.begin(), keys.end(), key(item)) == keys.end()) plan += item + ",";
  return plan + over;
}

// `record` into a timestamped sequence under the context's plan with `plan`'s choices over it (the
// context's own restored after): a linear-attention form forced for the bench stays forced.
rill::Result<rill::Sequence> recorded_under(rill::Context& ctx, const std::string& plan,
                                            const std::function<rill::Status(rill::Sequence&)>& record) {
  const std::string own = ctx.kernel_plan();
  RILL_RETURN_IF_ERROR(ctx.set_kernel_plan(plan_over(own, plan)));
  auto seq = ctx.sequence({.timestamps = ctx.device().caps.timestamps});
  rill::Status recorded = seq.is_ok() ? record(seq.value()) : seq.status();
  RILL_RETURN_IF_ERROR(ctx.set_kernel_plan(own));
  RILL_RETURN_IF_ERROR(recorded);
  return seq;
}

}  // namespace

rill::Result<OpTiming> time_op(rill::Context& ctx, const std::function<rill::Status(rill::Sequence&)>& record, int reps) {
  const bool gpu_time = ctx.device().caps.timestamps;
  RILL_ASSIGN_OR_RETURN(rill::Sequence seq, ctx.sequence({.timestamps = gpu_time}));
  RILL_RETURN_IF_ERROR(record(seq));
  // RILL_BENCH_COMPARE_PLAN: the same op on the same tensors recorded under that plan too, the two
  // run alternately, so that a shared machine's changes of speed fall on both alike.
  const char* compare_env = std::getenv("RILL_BENCH_COMPARE_PLAN");
  const std::string compare_plan = compare_env != nullptr ? compare_env : "";
  std::optional<rill::Sequence> compare;
  if (compare_env != nullptr) {
    RILL_ASSIGN_OR_RETURN(rill::Sequence other, recorded_under(ctx, compare_plan, record));
    compare.emplace(std::move(other));
  }
  auto warm_up = [&](rill::Sequence& s) -> rill::Status {
    RILL_RETURN_IF_ERROR(s.run());  // pipelines, caches
    return keep_gpu_busy(ctx, [&] { return s.run(); });
  };
  RILL_RETURN_IF_ERROR(warm_up(seq));
  if (compare) RILL_RETURN_IF_ERROR(warm_up(*compare));
  RILL_ASSIGN_OR_RETURN(const int at_least, bench_reps_from_env());
  reps = std::max(reps, at_least);
  std::vector<OpTiming> runs, compare_runs;
  for (int r = 0; r < reps; ++r) {
    RILL_ASSIGN_OR_RETURN(OpTiming run, timed_run(seq, gpu_time));
    runs.push_back(std::move(run));
    if (!compare) continue;
    RILL_ASSIGN_OR_RETURN(OpTiming other, timed_run(*compare, gpu_time));
    compare_runs.push_back(std::move(other));
  }
  OpTiming median = median_of(ctx, std::move(runs));
  if (compare) {
    median.compare = std::make_shared<OpTiming>(median_of(ctx, std::move(compare_runs)));
    median.compare_plan = compare_plan;
  }
  return median;
}

namespace {

// {kernel: {calls, ms}} of a timing's median run.
nlohmann::json kernels_json(const OpTiming& t) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, k] : t.kernels) {
    out[name] = {{"calls", k.calls}, {"ms", k.ms}};
    for (const rill::PipelineStatistic& s : k.compiler) out[name]["compiler"][s.name] = s.value;
  }
  return out;
}

}  // namespace

nlohmann::json op_record(const std::string& op, const std::string& variant, const nlohmann::json& shape,
                         const OpTiming& t, const rill::DevicePeaks& peaks, ComputeRoof roof) {
  const double s = t.median_ms * 1e-3;
  const double gflops = s > 0 ? double(t.flops) / s / 1e9 : 0.0;
  const double gbps = s > 0 ? double(t.bytes) / s / 1e9 : 0.0;
  // Share of the roof at this kernel's intensity (the same rule as the profiler's roofline).
  const double intensity = t.bytes > 0 ? double(t.flops) / double(t.bytes) : 1e30;
  const double ridge = peaks.fma_f32_gflops / peaks.copy_gbps;
  const bool memory_bound = intensity < ridge;
  nlohmann::json fraction = memory_bound ? gbps / peaks.copy_gbps : gflops / peaks.fma_f32_gflops;
  if (roof == ComputeRoof::kNone) fraction = nullptr;
  // The work's FLOPs and bytes come with the dispatches' timestamps: without them (a queue with no
  // timestamp bits) the rates, the roof and the bound are unknown, not zero.
  const bool counted = t.gpu_clock;
  nlohmann::json record = {
      {"op", op},
      {"variant", variant.empty() ? "default" : variant},
      {"shape", shape},
      {"median_ms", t.median_ms},
      {"fastest_ms", t.fastest_ms},
      {"gflops", counted ? nlohmann::json(gflops) : nlohmann::json()},
      {"gbps", counted ? nlohmann::json(gbps) : nlohmann::json()},
      {"peak_fraction", counted ? fraction : nlohmann::json()},
      {"roof", !counted                     ? nlohmann::json()
               : roof == ComputeRoof::kNone ? nlohmann::json("none measured (cooperative matrices)")
               : memory_bound               ? nlohmann::json("copy")
                                            : nlohmann::json("fma_f32")},
      {"bound", counted ? nlohmann::json(memory_bound ? "memory" : "compute") : nlohmann::json()},
      {"host_ms", t.host_ms},
      {"clock", t.gpu_clock ? "gpu" : "host"},  // what median_ms measures
      {"gpu_span_ms", t.gpu_clock ? nlohmann::json(t.span_ms) : nlohmann::json()},
      {"kernels", kernels_json(t)}};
  if (t.compare) {
    // The same op under RILL_BENCH_COMPARE_PLAN, alternated with this record's runs.
    record["compare"] = {{"kernel_plan", t.compare_plan},
                         {"median_ms", t.compare->median_ms},
                         {"fastest_ms", t.compare->fastest_ms},
                         {"kernels", kernels_json(*t.compare)}};
    record["speedup_vs_compare"] = t.median_ms > 0 ? t.compare->median_ms / t.median_ms : 0.0;
  }
  return record;
}

std::vector<std::string> comma_items(const std::string& list) {
  std::vector<std::string> items;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    items.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::string unknown_linear_attention_form(const std::string& forms) {
  for (const std::string& name : comma_items(forms))
    if (std::find(std::begin(kLinearAttentionForms), std::end(kLinearAttentionForms), name) ==
        std::end(kLinearAttentionForms))
      return "unknown linear-attention form '" + name +
             "' (known: chunked_parallel, chunked_serial, scan, recurrent, naive)";
  return "";
}

std::variant<std::vector<std::array<int64_t, 3>>, std::string> parse_matmul_shapes(const std::string& shapes) {
  std::vector<std::array<int64_t, 3>> out;
  if (shapes.empty()) return out;
  for (const std::string& item : comma_items(shapes)) {
    std::array<int64_t, 3> mnk{};
    size_t start = 0;
    bool ok = true;
    for (size_t i = 0; i < 3 && ok; ++i) {
      const size_t end = i < 2 ? item.find('x', start) : item.size();
      if (end == std::string::npos) {
        ok = false;
        break;
      }
      const char* first = item.data() + start;
      const auto [ptr, ec] = std::from_chars(first, item.data() + end, mnk[i]);
      ok = ec == std::errc() && ptr == item.data() + end && mnk[i] >= 1 && mnk[i] <= (1 << 20);
      start = end + 1;
    }
    const auto [m, n, k] = mnk;
    if (!ok || m * k > (int64_t(1) << 31) || k * n > (int64_t(1) << 31) || m * n > (int64_t(1) << 31))
      return "bad matmul shape '" + item + "' (MxNxK, each 1 to 1048576, at most 2^31 elements a matrix)";
    out.push_back(mnk);
  }
  return out;
}

bool bench_kernels(rill::Context& ctx, const std::string& ops, const KernelBenchOptions& options,
                   const rill::DevicePeaks& peaks, nlohmann::json& records) {
  auto wants = [&](const char* op) { return ops.empty() || ops.find(op) != std::string::npos; };
  const bool quick = options.quick;
  if (wants("rmsnorm") && !bench_rmsnorm(ctx, quick, peaks, records)) return false;
  if (wants("matmul") && !bench_matmul(quick, options.matmul_shapes, peaks, records)) return false;
  if (wants("linear_attention") && !bench_linear_attention(quick, options.la_forms, peaks, records)) return false;
  if (wants("block_attention") && !bench_block_attention(ctx, quick, peaks, records)) return false;
  return true;
}

}  // namespace rill_cli
