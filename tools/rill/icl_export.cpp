// `rill icl-export`: runs a checkpointed ICL model on tasks from a safetensors file and writes its
// per-task predictions, the mean loss and its gradient, so results can be checked against any
// other implementation; prints the model's and the baselines' losses on those tasks.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "rill/rill.hpp"
#include "rill/safetensors.hpp"

namespace rill_cli {

CLI::App* add_icl_export_command(CLI::App& app, IclExportArgs& a) {
  auto* cmd = app.add_subcommand("icl-export",
                                 "Run a checkpointed ICL model on tasks from a file; write predictions and gradient");
  cmd->add_option("--checkpoint", a.checkpoint, "Checkpoint from train-icl --checkpoint")->required();
  cmd->add_option("--tasks", a.tasks,
                  "safetensors: contexts [T,n,d], labels [T,n], queries [T,d], query_targets [T], optional sigmas [T]")
      ->required();
  cmd->add_option("--out", a.out, "safetensors to write: predictions [T], gradient [P], loss [1]");
  return cmd;
}

CLI::App* add_icl_tasks_command(CLI::App& app, IclTasksArgs& a) {
  auto* cmd = app.add_subcommand("icl-tasks", "Draw tasks with the GPU sampler of a checkpoint's setting; save a task set");
  cmd->add_option("--checkpoint", a.checkpoint, "Checkpoint whose configuration sets the task distribution")->required();
  cmd->add_option("--tasks", a.tasks, "How many tasks")->check(CLI::Range(1, 1 << 23));
  cmd->add_option("--seed", a.seed, "Seed of the draw")->check(kSeed);
  cmd->add_option("--out", a.out, "safetensors task set to write")->required();
  return cmd;
}

CLI::App* add_icl_diagnose_command(CLI::App& app, IclDiagnoseArgs& a) {
  auto* cmd = app.add_subcommand("icl-diagnose",
                                 "Gradient-noise tails, Hessian-diagonal condition number and directional smoothness (JSON)");
  cmd->add_option("--checkpoint", a.checkpoint, "Checkpoint to diagnose")->required();
  cmd->add_option("--batches", a.batches, "Stochastic gradients to sample")->check(CLI::Range(4, 100000));
  cmd->add_option("--reference-tasks", a.reference_tasks, "Tasks of the fixed set for the full gradient and curvature")
      ->check(CLI::Range(1, 1 << 22));
  return cmd;
}

int run_icl_tasks(const IclTasksArgs& a) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill icl-tasks: %s\n", s.to_string().c_str());
    return 1;
  };
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  auto trainer = rill::icl::Trainer::resume(ctx.value(), a.checkpoint);
  if (!trainer.is_ok()) return fail(trainer.status());
  auto set = trainer->sample_task_set(a.tasks, a.seed);
  if (!set.is_ok()) return fail(set.status());
  if (auto s = rill::icl::save_task_set(a.out, set.value()); !s.is_ok()) return fail(s);
  std::printf("wrote %d tasks (d=%d, n=%d) to %s\n", a.tasks, set->d, set->n, a.out.c_str());
  return 0;
}

int run_icl_diagnose(const IclDiagnoseArgs& a) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill icl-diagnose: %s\n", s.to_string().c_str());
    return 1;
  };
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  auto trainer = rill::icl::Trainer::resume(ctx.value(), a.checkpoint);
  if (!trainer.is_ok()) return fail(trainer.status());
  auto d = rill::icl::diagnose(trainer.value(), {.batches = a.batches, .reference_tasks = a.reference_tasks});
  if (!d.is_ok()) return fail(d.status());
  const nlohmann::json j = {{"checkpoint", a.checkpoint},
                            {"step", trainer->step()},
                            {"parameters", d->parameters},
                            {"full_loss", d->full_loss},
                            {"full_grad_norm", d->full_grad_norm},
                            {"noise_norm_mean", d->noise_norm_mean},
                            {"noise_kurtosis", d->noise_kurtosis},
                            {"noise_tail_index", d->noise_tail_index},
                            {"robust_condition_number", d->robust_condition_number},
                            {"directional_smoothness", d->directional_smoothness},
                            {"hessian_diagonal", d->hessian_diagonal}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

int run_icl_export(const IclExportArgs& a) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill icl-export: %s\n", s.to_string().c_str());
    return 1;
  };
  auto tasks = rill::icl::load_task_set(a.tasks);
  if (!tasks.is_ok()) return fail(tasks.status());
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  auto trainer = rill::icl::Trainer::resume(ctx.value(), a.checkpoint);
  if (!trainer.is_ok()) return fail(trainer.status());
  auto run = trainer->run_on(tasks.value());
  if (!run.is_ok()) return fail(run.status());
  const rill::icl::EvalReport& r = run->report;
  std::printf("%lld tasks (d=%d, n=%d), model at step %lld\n", (long long)tasks->tasks, tasks->d, tasks->n,
              (long long)trainer->step());
  std::printf("loss: model %.6g, ridge oracle %.6g, least squares %.6g, ridge(lambda=1) %.6g, adarr %.6g, tunedrr %.6g\n",
              r.model, r.ridge_oracle, r.least_squares, r.ridge_constant, r.adarr, r.tunedrr);
  if (a.out.empty()) return 0;
  rill::SafetensorsWriter w;
  const float loss = run->loss;
  for (const rill::Status& s :
       {w.add_floats("predictions", {int64_t(run->predictions.size())}, run->predictions),
        w.add_floats("gradient", {int64_t(run->gradient.size())}, run->gradient),
        w.add_floats("loss", {1}, std::span<const float>(&loss, 1)), w.set_metadata("checkpoint", a.checkpoint),
        w.set_metadata("tasks", a.tasks), w.write(a.out)})
    if (!s.is_ok()) return fail(s);
  std::printf("wrote %s\n", a.out.c_str());
  return 0;
}

}  // namespace rill_cli
