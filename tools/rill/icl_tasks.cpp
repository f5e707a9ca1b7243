// `rill icl-tasks`: draws tasks with the GPU sampler in a checkpoint's setting and saves them as a
// task set (to train on, or to feed other implementations).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "output_paths.hpp"
#include "rill/rill.hpp"

namespace rill_cli {

CLI::App* add_icl_tasks_command(CLI::App& app, IclTasksArgs& a) {
  auto* cmd =
      app.add_subcommand("icl-tasks", "Draw tasks with the GPU sampler of a checkpoint's setting; save a task set");
  cmd->add_option("--checkpoint", a.checkpoint, "Checkpoint whose configuration sets the task distribution")
      ->required();
  cmd->add_option("--tasks", a.tasks, "How many tasks")->check(CLI::Range(1, 1 << 23));
  cmd->add_option("--seed", a.seed, "Seed of the draw")->check(kSeed);
  cmd->add_option("--out", a.out, "safetensors task set to write")->required();
  return cmd;
}

int run_icl_tasks(const IclTasksArgs& a) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill icl-tasks: %s\n", s.to_string().c_str());
    return 1;
  };
  if (auto s = check_files({{"--out", a.out}}, {{"--checkpoint", a.checkpoint}}); !s.is_ok()) return fail(s);
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

}  // namespace rill_cli
