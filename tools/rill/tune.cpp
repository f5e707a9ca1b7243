// `rill tune`: times the kernel-plan choices a device's jobs can take (tile depths, decoding grids,
// ICL layer groupings, ...) against the plan's own and writes the faster ones to a tuning file
// (rill/tuning.hpp), which contexts given it plan with.
//
// One coordinate at a time: each choice is timed with the choices kept so far, and kept where its
// median beats the current plan's by more than the noise margin. Each timing runs in a context of
// its own (the plan is fixed when a context is created), after a warm-up that compiles its
// pipelines.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_ops.hpp"
#include "cli_checks.hpp"
#include "commands.hpp"
#include "json_text.hpp"
#include "median.hpp"
#include "output_paths.hpp"
#include "rill/context.hpp"
#include "rill/files.hpp"
#include "rill/icl.hpp"
#include "rill/lm.hpp"
#include "rill/tuning.hpp"

namespace rill_cli {
namespace {

// A choice is kept only when it beats the current plan by more than this fraction: medians of a
// few runs on a shared machine scatter by a few percent.
constexpr double kMargin = 0.05;

// What one job's timing needs, and the choices worth trying for it on each kernel family. GPUs:
// the knobs whose best value no session has measured on every GPU class; CPU drivers: the
// algorithms the plan turns down there and the block-attention forward's keys per step (each
// measured on lavapipe only, which tuning confirms or corrects on another CPU driver).
struct Knob {
  const char* job;  // the timing that judges it: "lm prefill", "lm decode" or "icl step"
  const char* key;
  std::vector<const char*> values;
};

std::vector<Knob> knobs_for(const std::string& family, const std::vector<std::string>& jobs) {
  const bool gpu = family == "gpu";
  std::vector<Knob> all;
  if (gpu) {
    // Chunks before tiles (each knob is tried over the choices kept before it): a tile as deep as a
    // short chunk walks its causal values unpaced by barriers (bench-h200/FINDINGS.md).
    all = {{"lm prefill", "la_chunk", {"16", "32"}},      // fewer causal scores per position, more chunk states
           {"lm prefill", "la_tile", {"4", "16", "32"}},  // around the plan's 8
           {"lm prefill", "la_scan_groups", {"1"}},
           {"lm prefill", "la_window", {"256"}},   // a window's chunk states small enough for L2
           {"lm prefill", "la_span", {"1", "8"}},  // around the plan's 2-4 chunks per states workgroup
           // The output pass's other forms (run 9 on an H200: fused scores, now the default, 1.13-1.17x
           // faster; grouped columns within 2 %).
           {"lm prefill", "la_columns", {"grouped"}},
           {"lm prefill", "la_scores", {"separate"}},
           {"lm prefill", "la_rows", {"paired"}},  // untimed on a GPU: balanced causal work, no barriers
           {"lm prefill", "block_tile", {"8", "32"}},
           {"lm prefill", "matmul_layout", {"strided"}},  // the plan's default is grouped since run 8
           {"lm prefill", "matmul_depth", {"32"}},
           {"lm prefill", "matmul_buffers", {"2"}},  // one barrier per slice, untimed on a GPU
           {"lm decode", "lm_decode_grid", {"128x64", "256x32", "512x8"}},
           {"lm decode", "lm_decode_columns", {"1", "8"}},
           {"lm decode", "lm_decode_rows", {"1", "8"}},
           {"icl step", "icl_layers", {"per-task", "per-workgroup"}},
           {"icl step", "icl_tasks_per_workgroup", {"1", "2", "4", "8"}},
           {"icl step", "icl_block", {"2", "3", "4"}},  // outputs per invocation, untimed on a GPU
           {"icl step", "icl_layers_per_dispatch", {"1"}},
           {"icl step", "icl_top_layer", {"full"}}};
  } else {
    all = {{"lm prefill", "linear_attention", {"parallel"}},
           {"lm prefill", "block_keys", {"1", "4"}},  // around the plan's 2 (DiagAttention layers)
           {"lm decode", "lm_decode", {"per-op"}},
           {"icl step", "icl_layers", {"per-workgroup"}}};
  }
  std::vector<Knob> out;
  for (const Knob& k : all)
    for (const std::string& j : jobs)
      if (std::string(k.job).rfind(j, 0) == 0) out.push_back(k);
  return out;
}

std::string joined(const std::string& plan, const std::string& choice) {
  return plan.empty() ? choice : plan + "," + choice;
}

struct Sizes {
  uint64_t prompt;
  int decode_tokens, reps, icl_steps;
};

class Tuner {
 public:
  Tuner(const TuneArgs& args, Sizes sizes, rill::lm::ModelConfig config, rill::lm::Weights weights)
      : args_(args), sizes_(sizes), config_(std::move(config)), weights_(std::move(weights)) {}

  // The median ms of `job` under `plan`; an error where the device refuses the plan. Measured once
  // per plan; `again` measures anew (the current plan against its best candidate, back to back, so
  // that a drift of the machine's speed since the sweep began does not choose).
  rill::Result<double> time(const std::string& job, const std::string& plan, bool again = false) {
    const std::string key = job + "|" + plan;
    if (auto it = cache_.find(key); it != cache_.end() && !again) return it->second;
    if (job == "icl step") {
      RILL_ASSIGN_OR_RETURN(double ms, time_icl(plan));
      return remember(job, plan, ms);
    }
    RILL_ASSIGN_OR_RETURN(const auto lm, time_lm(plan));
    remember("lm prefill", plan, lm.first);
    remember("lm decode", plan, lm.second);
    return job == "lm prefill" ? lm.first : lm.second;
  }

  std::vector<rill::TuningMeasurement> measurements;

 private:
  double remember(const std::string& job, const std::string& plan, double ms) {
    cache_[job + "|" + plan] = ms;
    measurements.push_back({job, plan, ms});
    return ms;
  }

  rill::Result<rill::Context> context(const std::string& plan) {
    rill::ContextOptions options;
    options.kernel_plan = plan;
    options.kernel_variant = args_.family;
    return rill::Context::create(options);
  }

  // {prefill ms, decode ms per token}: medians over the repetitions, after a warm-up.
  rill::Result<std::pair<double, double>> time_lm(const std::string& plan) {
    RILL_ASSIGN_OR_RETURN(rill::Context ctx, context(plan));
    // Softmax layers' caches hold the prompt and the tokens decoded after it (the default holds 4096).
    rill::lm::ModelOptions model_options;
    model_options.softmax_capacity = uint32_t(
        std::max<uint64_t>(model_options.softmax_capacity, sizes_.prompt + uint64_t(sizes_.decode_tokens) + 1));
    RILL_ASSIGN_OR_RETURN(rill::lm::Model model, rill::lm::Model::create(ctx, weights_, model_options));
    const std::vector<uint32_t> prompt = random_prompt(sizes_.prompt, config_.vocab);
    {  // the whole prompt once: every pipeline of its segments compiled before the timings
      RILL_ASSIGN_OR_RETURN(rill::lm::Session warm, model.session());
      RILL_RETURN_IF_ERROR(warm.prefill(prompt).status());
      RILL_RETURN_IF_ERROR(warm.decode(0).status());
    }
    // Then a GPU busy until its clocks are up, as the bench does.
    RILL_RETURN_IF_ERROR(keep_gpu_busy(ctx, [&]() -> rill::Status {
      RILL_ASSIGN_OR_RETURN(rill::lm::Session warm, model.session());
      return warm.prefill(prompt).status();
    }));
    std::vector<double> prefill, decode;
    for (int r = 0; r < sizes_.reps; ++r) {
      RILL_ASSIGN_OR_RETURN(rill::lm::Session session, model.session());
      const auto t0 = Clock::now();
      RILL_ASSIGN_OR_RETURN(std::vector<float> logits, session.prefill(prompt));
      prefill.push_back(ms_since(t0));
      for (int i = 0; i < sizes_.decode_tokens; ++i) {
        const uint32_t next = uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        const auto t1 = Clock::now();
        RILL_ASSIGN_OR_RETURN(logits, session.decode(next));
        decode.push_back(ms_since(t1));
      }
    }
    return std::pair{median(prefill), median(decode)};
  }

  // ms per training step: the median of the repetitions' means.
  rill::Result<double> time_icl(const std::string& plan) {
    RILL_ASSIGN_OR_RETURN(rill::Context ctx, context(plan));
    const rill::icl::TrainConfig config = args_.icl_setting == "ahn1"
                                              ? rill::icl::ahn_setting(rill::icl::AhnSetting::k1)
                                              : rill::icl::vladymyrov_setting(rill::icl::Parameterization::kFull, 1.0f);
    RILL_ASSIGN_OR_RETURN(rill::icl::Trainer trainer, rill::icl::Trainer::create(ctx, config));
    RILL_RETURN_IF_ERROR(trainer.train(config.read_every).status());  // warm-up
    RILL_RETURN_IF_ERROR(keep_gpu_busy(ctx, [&] { return trainer.train(config.read_every).status(); }));
    std::vector<double> per_step;
    for (int r = 0; r < sizes_.reps; ++r) {
      const auto t0 = Clock::now();
      RILL_RETURN_IF_ERROR(trainer.train(sizes_.icl_steps).status());
      per_step.push_back(ms_since(t0) / sizes_.icl_steps);
    }
    return median(per_step);
  }

  const TuneArgs& args_;
  Sizes sizes_;
  rill::lm::ModelConfig config_;
  rill::lm::Weights weights_;
  std::map<std::string, double> cache_;
};

int fail(const rill::Status& s, const char* what) {
  std::fprintf(stderr, "rill tune: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

CLI::App* add_tune_command(CLI::App& app, TuneArgs& a) {
  auto* cmd = app.add_subcommand(
      "tune", "Time the kernel-plan choices of the device's jobs and write the faster ones to a tuning file");
  cmd->add_option("--out", a.out,
                  "The tuning file to write (contexts read it from ContextOptions::tuning_path or RILL_TUNING)");
  cmd->add_option("--jobs", a.jobs, "Comma-separated jobs to tune: lm (prefill and decode), icl (a training step)");
  cmd->add_flag("--quick", a.quick,
                "Shorter prompts and fewer repetitions (a coarser answer in a fraction of the time)");
  cmd->add_option("--lm-config", a.lm_config, "The TransNormer model to tune for (default: the default model)");
  cmd->add_option("--icl-setting", a.icl_setting, "The ICL setting to tune for")
      ->check(CLI::IsMember({"ahn1", "vladymyrov"}));
  cmd->add_option("--family", a.family, "Kernel family to tune (default: the device's own)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  record_given_options(cmd, a.given);  // run_tune refuses options of a job it does not run
  return cmd;
}

int run_tune(const TuneArgs& args) {
  for (const char* env : {"RILL_KERNEL_PLAN", "RILL_TUNING"})
    if (const char* v = std::getenv(env); v != nullptr && *v != '\0') {
      std::fprintf(stderr, "rill tune: unset %s: tuning measures the plan's own choices against the alternatives\n",
                   env);
      return 2;
    }
  std::vector<std::string> jobs;
  for (size_t start = 0; start <= args.jobs.size();) {
    const size_t comma = std::min(args.jobs.find(',', start), args.jobs.size());
    const std::string job = args.jobs.substr(start, comma - start);
    if (job != "lm" && job != "icl") {
      std::fprintf(stderr, "rill tune: unknown job '%s' (known: lm, icl)\n", job.c_str());
      return 2;
    }
    jobs.push_back(job);
    start = comma + 1;
  }
  // An option of a job this run does not tune would change nothing: refused, not ignored.
  for (const auto& [option, job] : {std::pair{"--lm-config", "lm"}, std::pair{"--icl-setting", "icl"}})
    if (args.given.count(option) && std::find(jobs.begin(), jobs.end(), job) == jobs.end()) {
      std::fprintf(stderr, "rill tune: %s applies to --jobs %s, which this run does not tune (--jobs %s)\n", option,
                   job, args.jobs.c_str());
      return 2;
    }
  if (args.out.empty()) return fail(rill::invalid_argument("give a path"), "--out");
  if (auto s = check_files({{"--out", args.out}}, {{"--lm-config", args.lm_config}}); !s.is_ok())
    return fail(s, "files");
  rill::ContextOptions options;
  options.kernel_variant = args.family;
  auto probe = rill::Context::create(options);
  if (!probe.is_ok()) return fail(probe.status(), "context");
  const rill::DeviceInfo device = probe->device();
  const std::string family = probe->kernel_family();
  const bool gpu = family == "gpu";
  const Sizes sizes{.prompt = args.quick ? (gpu ? 8192u : 512u) : (gpu ? 65536u : 4096u),
                    .decode_tokens = args.quick ? 16 : 48,
                    .reps = 3,
                    .icl_steps = args.quick ? 5 : (gpu ? 200 : 30)};
  rill::lm::ModelConfig config;
  if (!args.lm_config.empty()) {
    auto loaded = rill::lm::load_config(args.lm_config);
    if (!loaded.is_ok()) return fail(loaded.status(), "--lm-config");
    config = std::move(loaded).value();
  }
  if (auto s = config.validate(); !s.is_ok()) return fail(s, "model config");
  auto weights = rill::lm::Weights::random(config, 1);
  if (!weights.is_ok()) return fail(weights.status(), "weights");
  std::fprintf(stderr, "rill tune: %s, %s kernels\n", device.name.c_str(), family.c_str());

  Tuner tuner(args, sizes, config, std::move(weights).value());
  std::string plan;
  for (const Knob& knob : knobs_for(family, jobs)) {
    auto base = tuner.time(knob.job, plan);
    if (!base.is_ok()) return fail(base.status(), knob.job);
    std::optional<std::pair<std::string, double>> best;
    for (const char* value : knob.values) {
      const std::string choice = std::string(knob.key) + "=" + value;
      auto ms = tuner.time(knob.job, joined(plan, choice));
      if (!ms.is_ok()) {  // the device or the model refuses it: not a candidate here
        std::fprintf(stderr, "  %-10s %-28s refused: %s\n", knob.job, choice.c_str(), ms.status().message().c_str());
        continue;
      }
      std::fprintf(stderr, "  %-10s %-28s %9.3f ms (current plan %.3f)\n", knob.job, choice.c_str(), *ms, *base);
      if (!best || *ms < best->second) best = {choice, *ms};
    }
    if (!best || best->second >= *base * (1.0 - kMargin)) continue;
    // The winner and the current plan timed again back to back: the sweep took minutes.
    auto base_again = tuner.time(knob.job, plan, true);
    auto best_again = tuner.time(knob.job, joined(plan, best->first), true);
    if (!base_again.is_ok()) return fail(base_again.status(), knob.job);
    if (best_again.is_ok() && *best_again < *base_again * (1.0 - kMargin)) {
      plan = joined(plan, best->first);
    } else {
      std::fprintf(stderr, "  %-10s %-28s not kept: timed again %.3f ms against the current plan's %.3f\n", knob.job,
                   best->first.c_str(), best_again.is_ok() ? *best_again : 0.0, *base_again);
    }
  }

  const rill::TuningFile file{.kernel_plan = plan, .family = family, .measurements = tuner.measurements};
  if (auto s = rill::write_tuning_file(args.out, device, file); !s.is_ok()) return fail(s, "writing");
  nlohmann::json out = {{"device", device.name},
                        {"family", family},
                        {"kernel_plan", plan},
                        {"file", args.out},
                        {"timings", tuner.measurements.size()}};
  std::printf("%s\n", json_text(out).c_str());
  std::fprintf(stderr, "rill tune: %s written (%s)\n", args.out.c_str(),
               plan.empty() ? "the plan's own choices were fastest" : plan.c_str());
  return 0;
}

}  // namespace rill_cli
