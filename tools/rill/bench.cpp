// `rill bench`: engine-overhead benchmarks, printed as JSON records.
//   dispatch: host cost of recording, GPU+host cost per dispatch with and without barriers,
//             and the submit-to-completion round trip.
//   pipeline: pipeline creation cold, from a warm pipeline-cache file, and cached lookups.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "bench_ops.hpp"
#include "bench_peers.hpp"
#include "cli_checks.hpp"
#include "commands.hpp"
#include "json_text.hpp"
#include "median.hpp"
#include "process.hpp"
#include "rill/rill.hpp"

namespace rill_cli {
namespace {

struct FillPush {
  uint32_t n;
  float value;
};

rill::Dispatch fill(const rill::Tensor& t, float value, std::vector<rill::SpecValue> spec = {}) {
  return {.kernel = "util/fill", .bindings = {&t}, .push = rill::push_bytes(FillPush{1, value}),
          .groups = {1, 1, 1}, .spec = std::move(spec)};
}

bool check(const rill::Status& s) {
  if (s.is_ok()) return true;
  std::fprintf(stderr, "rill bench: %s\n", s.to_string().c_str());
  return false;
}

bool bench_dispatch(rill::Context& c, bool quick, nlohmann::json& out) {
  const uint32_t count = quick ? 200 : 1000;
  const int reps = quick ? 3 : 7;
  auto shared = c.tensor(rill::DType::kF32, {1}, "shared");
  if (!check(shared.status())) return false;
  std::vector<rill::Tensor> distinct;
  for (uint32_t i = 0; i < count; ++i) {
    auto t = c.tensor(rill::DType::kF32, {1});
    if (!check(t.status())) return false;
    distinct.push_back(std::move(t).value());
  }
  for (bool dependent : {false, true}) {
    std::vector<double> record_ms, run_ms;
    uint32_t barriers = 0;
    for (int r = 0; r < reps; ++r) {
      auto seq = c.sequence();
      if (!check(seq.status())) return false;
      auto t0 = Clock::now();
      for (uint32_t i = 0; i < count; ++i)
        if (!check(seq->dispatch(fill(dependent ? shared.value() : distinct[i], float(i))))) return false;
      if (!check(seq->finish())) return false;
      record_ms.push_back(ms_since(t0));
      t0 = Clock::now();
      if (!check(seq->run())) return false;
      run_ms.push_back(ms_since(t0));
      barriers = seq->stats().barriers;
    }
    out.push_back({{"op", "dispatch"}, {"variant", dependent ? "dependent (barrier each)" : "independent"},
                   {"shape", {{"dispatches", count}}}, {"barriers", barriers},
                   {"record_us_per_dispatch", 1e3 * median(record_ms) / count},
                   {"run_us_per_dispatch", 1e3 * median(run_ms) / count}});
  }
  // Round trip: one tiny dispatch, submitted and waited for, many times (replay, no re-recording).
  auto seq = c.sequence();
  if (!check(seq.status()) || !check(seq->dispatch(fill(shared.value(), 1.0f))) || !check(seq->run())) return false;
  std::vector<double> trip;
  for (uint32_t i = 0; i < (quick ? 50u : 300u); ++i) {
    auto t0 = Clock::now();
    if (!check(seq->run())) return false;
    trip.push_back(ms_since(t0));
  }
  out.push_back({{"op", "submit"}, {"variant", "round trip, 1 dispatch"}, {"shape", {{"dispatches", 1}}},
                 {"median_ms", median(trip)}});
  return true;
}

bool bench_pipeline(bool quick, nlohmann::json& out) {
  // This process's own folder (removed after): two benches at once (one per GPU) must not empty
  // each other's cache between the cold and the warm pass, nor another user plant one.
  auto dir = ScratchDir::create("rill-bench-pipeline-cache");
  if (!check(dir.status())) return false;
  const std::filesystem::path path = dir->path() / "pipelines.bin";
  // The drivers' own disk caches (Mesa's, NVIDIA's) would serve the "cold" pass from an earlier run:
  // off for this bench's contexts (they read it when a device is made), restored after.
  struct DriverCachesOff {
    std::vector<std::pair<std::string, std::optional<std::string>>> saved;
    DriverCachesOff() {
      for (const auto& [name, value] :
           {std::pair{"MESA_SHADER_CACHE_DISABLE", "true"}, {"__GL_SHADER_DISK_CACHE", "0"}}) {
        const char* was = std::getenv(name);
        saved.emplace_back(name, was ? std::optional<std::string>(was) : std::nullopt);
        set_environment(name, value);
      }
    }
    ~DriverCachesOff() {
      for (const auto& [name, value] : saved)
        value ? set_environment(name.c_str(), value->c_str()) : unset_environment(name.c_str());
    }
  } driver_caches_off;
  const uint32_t variants = quick ? 8 : 32;
  double cold_ms = 0, warm_ms = 0, lookup_us = 0;
  uint64_t warm_hits = 0;
  for (int pass = 0; pass < 2; ++pass) {
    rill::ContextOptions options;
    options.pipeline_cache_path = path.string();
    auto ctx = rill::Context::create(options);
    if (!check(ctx.status())) return false;
    auto t = ctx->tensor(rill::DType::kF32, {1});
    if (!check(t.status())) return false;
    auto seq = ctx->sequence();
    if (!check(seq.status())) return false;
    // Distinct workgroup sizes -> distinct pipelines: each first dispatch creates one, timed alone
    // (its recording is microseconds of it).
    std::vector<double> created_ms;
    for (uint32_t v = 0; v < variants; ++v) {
      const auto start = Clock::now();
      if (!check(seq->dispatch(fill(t.value(), 0.0f, {rill::spec_uint("WG_SIZE", 32 + v)})))) return false;
      created_ms.push_back(ms_since(start));
    }
    (pass == 0 ? cold_ms : warm_ms) = median(created_ms);
    if (pass == 1) warm_hits = ctx->pipeline_stats().driver_cache_hits;
    // Lookups of existing pipelines.
    const auto t0 = Clock::now();
    for (uint32_t v = 0; v < variants * 10; ++v)
      if (!check(seq->dispatch(fill(t.value(), 0.0f, {rill::spec_uint("WG_SIZE", 32 + v % variants)})))) return false;
    lookup_us = 1e3 * ms_since(t0) / (variants * 10);
    if (!check(seq->run()) || !check(ctx->save_pipeline_cache())) return false;
  }
  out.push_back({{"op", "pipeline"}, {"variant", "create, cold cache"}, {"shape", {{"pipelines", variants}}},
                 {"median_ms", cold_ms}});
  out.push_back({{"op", "pipeline"}, {"variant", "create, from cache file"}, {"shape", {{"pipelines", variants}}},
                 {"median_ms", warm_ms}, {"driver_cache_hits", warm_hits}});
  out.push_back({{"op", "pipeline"}, {"variant", "record with existing pipeline"}, {"shape", {{"dispatches", variants * 10}}},
                 {"record_us_per_dispatch", lookup_us}});
  return true;
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchArgs& a) {
  auto* cmd = app.add_subcommand("bench", "Benchmarks; prints JSON");
  cmd->add_option("--op", a.ops,
                  "Comma-separated: peaks, dispatch, pipeline, rmsnorm, matmul, linear_attention, block_attention, "
                  "icl, lm; or all");
  cmd->add_flag("--quick", a.quick, "Fewer repetitions (under a minute)");
  cmd->add_flag("--no-torch", a.no_torch, "icl: do not time the PyTorch-CPU baseline");
  cmd->add_flag("--peers", a.peers,
                "time the same work in PyTorch in this run (CUDA when it sees a GPU, else the CPU) and add "
                "peer_ms and speedup_vs_peer to each kernel record (needs python3-torch)");
  cmd->add_option("--lm-config", a.lm_config, "lm: model config JSON (default: width 256, 8 heads, 6 layers)");
  cmd->add_option("--lm-max-tokens", a.lm_max_tokens, "lm: longest prompt to time, 1024 or more (default 1048576)")
      ->check(kCount & CLI::Range(uint64_t{1024}, UINT64_MAX));
  cmd->add_option("--lm-weight-storage", a.lm_weight_storage,
                  "lm: the linear layers' weights: precision (f32), f16, int8 or int4")
      ->check(CLI::IsMember({"precision", "f16", "int8", "int4"}));
  cmd->add_option("--lm-segment", a.lm_segment, "lm: prefill segment length (0: the model's default)")->check(kSegment);
  cmd->add_option("--lm-precision", a.lm_precision,
                  "lm: activations and weights in f32 or f16 (f16 matmuls take "
                  "cooperative matrices where the device has them)")
      ->check(CLI::IsMember({"f32", "f16"}));
  cmd->add_flag("--lm-no-baseline", a.lm_no_baseline,
                "lm: skip the softmax-attention baseline (a large config's quadratic baseline takes hours)");
  cmd->add_option("--la-forms", a.la_forms,
                  "linear_attention: comma-separated forms to time (chunked_parallel, chunked_serial, scan, "
                  "recurrent, naive; default: all), e.g. only the GPU form in a plan sweep")
      ->check([](const std::string& forms) { return unknown_linear_attention_form(forms); });
  cmd->add_option("--matmul-shapes", a.matmul_shapes,
                  "matmul: comma-separated MxNxK products to time instead of the bench's own, e.g. "
                  "65536x256x512,65536x256x256")
      ->check([](const std::string& shapes) {
        const auto parsed = parse_matmul_shapes(shapes);
        return std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : std::string();
      });
  record_given_options(cmd, a.given);  // run_bench refuses options of ops the run does not time
  return cmd;
}

int run_bench(const BenchArgs& args) {
  // Every name is checked before any work: a typo must not give an empty, successful run.
  static const std::set<std::string> kKnown = {"all",  "peaks",           "dispatch",        "pipeline", "rmsnorm",
                                               "matmul", "linear_attention", "block_attention", "icl",      "lm"};
  for (const std::string& name : comma_items(args.ops)) {
    if (!kKnown.count(name)) {
      std::fprintf(stderr, "rill bench: unknown op '%s' (known: all, peaks, dispatch, pipeline, rmsnorm, matmul, "
                           "linear_attention, block_attention, icl, lm)\n", name.c_str());
      return 2;
    }
  }
  const auto matmul_shapes = parse_matmul_shapes(args.matmul_shapes);  // the option's check refused bad ones
  if (const auto* error = std::get_if<std::string>(&matmul_shapes)) {
    std::fprintf(stderr, "rill bench: %s\n", error->c_str());
    return 2;
  }
  const auto ops = comma_items(args.ops);
  const bool all = std::find(ops.begin(), ops.end(), "all") != ops.end();
  auto wants = [&](const char* op) { return all || std::find(ops.begin(), ops.end(), op) != ops.end(); };
  // An option of an op the run does not time is refused, not ignored: `--op matmul --la-forms scan`
  // would time the bench's matmuls and say nothing of the forms asked for.
  static const std::vector<std::pair<const char*, std::vector<const char*>>> kOptionOps = {
      {"--no-torch", {"icl"}},
      {"--peers", {"rmsnorm", "matmul", "linear_attention", "block_attention", "icl", "lm"}},
      {"--lm-config", {"lm"}},
      {"--lm-max-tokens", {"lm"}},
      {"--lm-weight-storage", {"lm"}},
      {"--lm-segment", {"lm"}},
      {"--lm-precision", {"lm"}},
      {"--lm-no-baseline", {"lm"}},
      {"--la-forms", {"linear_attention"}},
      {"--matmul-shapes", {"matmul"}}};
  for (const auto& [option, option_ops] : kOptionOps) {
    if (!args.given.count(option) || std::any_of(option_ops.begin(), option_ops.end(), wants)) continue;
    std::string names;
    for (const char* op : option_ops) names += std::string(names.empty() ? "" : ", ") + op;
    std::fprintf(stderr, "rill bench: %s applies to --op %s, which this run does not time (--op %s)\n", option,
                 names.c_str(), args.ops.c_str());
    return 2;
  }
  if (!check(bench_reps_from_env().status())) return 1;  // before any work, not at the first timed op
  std::optional<LmBenchSetup> lm_setup;
  if (wants("lm")) {
    auto setup = lm_bench_setup(args);
    if (!check(setup.status())) return 1;
    lm_setup = std::move(setup).value();
  }
  nlohmann::json records = nlohmann::json::array();
  auto ctx = rill::Context::create();
  if (!check(ctx.status())) return 1;
  bool ok = true;
  nlohmann::json doc = {{"device", ctx->device().name}};
  // The plan choices the run was forced or tuned to, so that a record says what it timed.
  if (const char* plan = std::getenv("RILL_KERNEL_PLAN"); plan != nullptr && *plan != '\0') doc["kernel_plan"] = plan;
  if (!ctx->tuned_plan().empty()) doc["tuned_plan"] = ctx->tuned_plan();
  const bool kernels =
      wants("rmsnorm") || wants("matmul") || wants("linear_attention") || wants("block_attention");
  if (wants("peaks") || kernels) {
    // Measured fresh by every run (and written to the cache that profiles use).
    auto peaks = rill::device_peaks(ctx.value(), {.quick = args.quick, .refresh = true});
    if (!check(peaks.status())) return 1;
    if (kernels)
      ok = ok &&
           bench_kernels(ctx.value(), all ? "" : args.ops,
                         {.quick = args.quick, .la_forms = args.la_forms, .matmul_shapes = std::get<0>(matmul_shapes)},
                         peaks.value(), records);
    doc["device_peak"] = {{"fma_f32_gflops", peaks->fma_f32_gflops}, {"fma_f16_gflops", peaks->fma_f16_gflops},
                          {"copy_gbps", peaks->copy_gbps}, {"dispatch_latency_us", peaks->dispatch_latency_us}};
  }
  if (wants("dispatch")) ok = ok && bench_dispatch(ctx.value(), args.quick, records);
  if (wants("pipeline")) ok = ok && bench_pipeline(args.quick, records);
  if (wants("icl")) ok = ok && bench_icl(ctx.value(), args.quick, !args.no_torch, records);
  if (lm_setup) ok = ok && bench_lm(ctx.value(), args, *lm_setup, records);
  if (args.peers) doc["peer"] = attach_peers(records, args.quick);
  doc["records"] = records;
  std::printf("%s\n", json_text(doc).c_str());
  return ok ? 0 : 1;
}

}  // namespace rill_cli
