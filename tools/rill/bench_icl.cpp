// `rill bench --op icl`: training throughput of the ICL trainer at the papers' settings, and the
// same model trained by PyTorch on the CPU (tools/peers/icl_torch_baseline.py, when Debian's
// python3-torch is installed) measured in the same run, with the ratio; then a grid of models
// trained at once (TrainerGrid), in model-steps per second against one model alone; and an
// evaluation on 100,000 tasks with the ridge baselines.
#include <chrono>
#include <cstdio>
#include <memory>

#include "bench_ops.hpp"
#include "bench_peers.hpp"
#include "rill/icl.hpp"

namespace rill_cli {
namespace {

using namespace rill::icl;

// Runs the PyTorch baseline and returns its JSON record, or an object saying why there is none.
nlohmann::json torch_baseline(const std::string& setting, int steps) {
  return run_python_json(std::string(RILL_SOURCE_DIR) + "/tools/peers/icl_torch_baseline.py",
                         {"--setting", setting, "--steps", std::to_string(steps)});
}

// Times `steps` steps after a warm-up read; seconds, or a negative value after printing the error.
template <typename Run>
double timed(Run&& run, const char* what) {
  const auto t0 = std::chrono::steady_clock::now();
  const rill::Status s = run();
  if (!s.is_ok()) {
    std::fprintf(stderr, "rill bench icl: %s: %s\n", what, s.to_string().c_str());
    return -1.0;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Many Vladymyrov-setting models (seeds 1..M) in one grid against one of them alone, same run. A
// GPU gets the 21 models; a CPU driver, whose cores one model already fills, 4.
bool bench_icl_grid(rill::Context& ctx, bool quick, nlohmann::json& out) {
  const bool cpu = ctx.device().type == rill::DeviceType::kCpu;
  const int models = cpu ? 4 : 21, steps = quick ? 10 : (cpu ? 50 : 500);
  std::vector<TrainConfig> configs;
  for (int m = 0; m < models; ++m) {
    TrainConfig c = vladymyrov_setting(Parameterization::kFull, 1.0f);
    c.seed = uint64_t(m + 1);
    c.read_every = steps;
    configs.push_back(c);
  }
  auto grid = TrainerGrid::create(ctx, configs);
  auto alone = Trainer::create(ctx, configs.front());
  if (!grid.is_ok() || !alone.is_ok()) {
    std::fprintf(stderr, "rill bench icl grid: %s\n",
                 (grid.is_ok() ? alone.status() : grid.status()).to_string().c_str());
    return false;
  }
  auto run_grid = [&] { return grid->train(steps).status(); };
  auto run_alone = [&] { return alone->train(steps).status(); };
  if (timed(run_grid, "grid warm-up") < 0 || timed(run_alone, "warm-up") < 0) return false;
  // Each timed run straight after GPU load of its own (keep_gpu_busy: clocks).
  if (timed([&] { return keep_gpu_busy(ctx, run_grid); }, "grid warm-up") < 0) return false;
  const double grid_s = timed(run_grid, "grid");
  if (timed([&] { return keep_gpu_busy(ctx, run_alone); }, "warm-up") < 0) return false;
  const double alone_s = timed(run_alone, "one model");
  if (grid_s < 0 || alone_s < 0) return false;
  const TrainConfig& c = configs.front();
  out.push_back(
      {{"op", "icl_grid"},
       {"variant", "vladymyrov"},
       {"shape",
        {{"d", c.task.d}, {"n", c.task.n}, {"layers", c.model.layers}, {"batch", c.batch}, {"models", models}}},
       {"steps", steps},
       {"median_ms", 1e3 * grid_s / steps},  // per grid step, mean over one timed run
       {"model_steps_per_s", double(models) * steps / grid_s},
       {"one_model_steps_per_s", steps / alone_s},
       {"speedup_vs_one_model", double(models) * alone_s / grid_s}});
  return true;
}

// Evaluation at the papers' scale: 100,000 fresh Vladymyrov-setting tasks (10,000 with --quick),
// the model's loss on the device and the five ridge baselines on host threads, TUNEDRR tuned on
// 1,000 more, as `Trainer::evaluate` runs it; wall time after a small warm-up evaluation, then
// of the same evaluation again (the baselines kept).
bool bench_icl_eval(rill::Context& ctx, bool quick, nlohmann::json& out) {
  const TrainConfig c = vladymyrov_setting(Parameterization::kFull, 1.0f);
  auto trainer = Trainer::create(ctx, c);
  if (!trainer.is_ok()) {
    std::fprintf(stderr, "rill bench icl eval: %s\n", trainer.status().to_string().c_str());
    return false;
  }
  EvalOptions options;
  options.tasks = 256;  // warm-up: pipelines and caches
  auto evaluate_small = [&] { return trainer->evaluate(options).status(); };
  if (timed(evaluate_small, "evaluation warm-up") < 0) return false;
  if (timed([&] { return keep_gpu_busy(ctx, evaluate_small); }, "evaluation warm-up") < 0) return false;
  options.tasks = quick ? 10000 : 100000;
  rill::Result<EvalReport> report = rill::internal_error("not run");
  const double seconds = timed(
      [&] {
        report = trainer->evaluate(options);
        return report.status();
      },
      "evaluation");
  if (seconds < 0) return false;
  // Evaluating again with the same options, as a run that evaluates every K steps does: the
  // trainer keeps the baselines of those tasks and runs only the model.
  const double again = timed([&] { return trainer->evaluate(options).status(); }, "evaluation again");
  if (again < 0) return false;
  out.push_back({{"op", "icl_eval"},
                 {"variant", "vladymyrov"},
                 {"shape",
                  {{"d", c.task.d},
                   {"n", c.task.n},
                   {"layers", c.model.layers},
                   {"tasks", options.tasks},
                   {"tuning_tasks", options.tuning_tasks}}},
                 {"median_ms", 1e3 * seconds},  // one timed evaluation
                 {"tasks_per_s", options.tasks / seconds},
                 {"again_ms", 1e3 * again},  // the same evaluation again: the model only
                 {"model_loss", report->model},
                 {"ridge_oracle", report->ridge_oracle}});
  return true;
}

}  // namespace

bool bench_icl(rill::Context& ctx, bool quick, bool with_torch, nlohmann::json& out) {
  struct Setting {
    const char* name;
    TrainConfig config;
  };
  const Setting settings[] = {{"ahn1", ahn_setting(AhnSetting::k1)},
                              {"vladymyrov", vladymyrov_setting(Parameterization::kFull, 1.0f)}};
  for (const Setting& s : settings) {
    const int steps = quick ? 30 : 300;
    auto trainer = Trainer::create(ctx, s.config);
    if (!trainer.is_ok()) {
      std::fprintf(stderr, "rill bench icl: %s\n", trainer.status().to_string().c_str());
      return false;
    }
    if (auto first = trainer->train(s.config.read_every); !first.is_ok()) {  // warm-up: pipelines, caches
      std::fprintf(stderr, "rill bench icl: %s\n", first.status().to_string().c_str());
      return false;
    }
    const rill::Status warmed =
        keep_gpu_busy(ctx, [&] { return trainer->train(s.config.read_every).status(); });  // GPU clocks
    if (!warmed.is_ok()) {
      std::fprintf(stderr, "rill bench icl: warm-up: %s\n", warmed.to_string().c_str());
      return false;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto records = trainer->train(steps);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!records.is_ok()) {
      std::fprintf(stderr, "rill bench icl: %s\n", records.status().to_string().c_str());
      return false;
    }
    const TrainConfig& c = s.config;
    nlohmann::json rec = {
        {"op", "icl_train"},
        {"variant", s.name},
        {"shape",
         {{"d", c.task.d}, {"n", c.task.n}, {"layers", c.model.layers}, {"batch", c.batch},
          {"parameters", parameter_count(c.model, c.task.d)}, {"param", std::string(name(c.model.param))}}},
        {"steps", steps},
        {"median_ms", 1e3 * seconds / steps},  // mean per step over one timed run
        {"steps_per_s", steps / seconds},
        {"tasks_per_s", steps * double(c.batch) / seconds},
        {"host_reads_per_step", 1.0 / c.read_every},
        {"final_loss", records->back().loss}};
    if (with_torch) {
      nlohmann::json torch = torch_baseline(s.name, quick ? 20 : 100);
      if (torch.contains("steps_per_s") && torch["steps_per_s"].is_number()) {
        const double peer_ms = 1e3 / torch["steps_per_s"].get<double>();
        rec["peer_ms"] = peer_ms;
        rec["speedup_vs_peer"] = peer_ms / rec["median_ms"].get<double>();
        rec["speedup_vs_pytorch_cpu"] = rec["speedup_vs_peer"];  // the name records had before peer_ms
      }
      rec["pytorch_cpu"] = torch;
    }
    out.push_back(rec);
  }
  return bench_icl_grid(ctx, quick, out) && bench_icl_eval(ctx, quick, out);
}

}  // namespace rill_cli
