// `rill icl-export`: runs a checkpointed ICL model on tasks from a safetensors file and writes its
// per-task predictions, the mean loss and its gradient, so results can be checked against any
// other implementation; prints the model's and the baselines' losses on those tasks.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "commands.hpp"
#include "output_paths.hpp"
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

int run_icl_export(const IclExportArgs& a) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill icl-export: %s\n", s.to_string().c_str());
    return 1;
  };
  if (auto s = check_files({{"--out", a.out}}, {{"--checkpoint", a.checkpoint}, {"--tasks", a.tasks}}); !s.is_ok())
    return fail(s);
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
  const bool finite =
      std::isfinite(run->loss) && std::isfinite(r.model) &&
      std::all_of(run->gradient.begin(), run->gradient.end(), [](float v) { return std::isfinite(v); }) &&
      std::all_of(run->predictions.begin(), run->predictions.end(), [](float v) { return std::isfinite(v); });
  if (!finite) {  // as train-icl stops: a NaN file would read as a result
    std::fprintf(stderr,
                 "rill icl-export: the model's loss, gradient or predictions on these tasks are not finite (values "
                 "that large overflow its f32 arithmetic, or the checkpoint's parameters do)%s\n",
                 a.out.empty() ? "" : "; nothing written");
    return 1;
  }
  if (a.out.empty()) return 0;
  rill::SafetensorsWriter w;
  const float loss = run->loss;
  // In turn: a step that fails writes no file.
  const std::function<rill::Status()> steps[] = {
      [&] { return w.add_floats("predictions", {int64_t(run->predictions.size())}, run->predictions); },
      [&] { return w.add_floats("gradient", {int64_t(run->gradient.size())}, run->gradient); },
      [&] { return w.add_floats("loss", {1}, std::span<const float>(&loss, 1)); },
      [&] { return w.set_metadata("checkpoint", a.checkpoint); },
      [&] { return w.set_metadata("tasks", a.tasks); },
      [&] { return w.write(a.out); }};
  for (const auto& step : steps)
    if (const rill::Status s = step(); !s.is_ok()) return fail(s);
  std::printf("wrote %s\n", a.out.c_str());
  return 0;
}

}  // namespace rill_cli
