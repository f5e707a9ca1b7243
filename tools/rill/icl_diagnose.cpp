// `rill icl-diagnose`: the optimisation landscape at a checkpoint (gradient-noise tails, Hessian
// diagonal condition number, directional smoothness), printed as JSON.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "json_text.hpp"
#include "rill/rill.hpp"

namespace rill_cli {

CLI::App* add_icl_diagnose_command(CLI::App& app, IclDiagnoseArgs& a) {
  auto* cmd = app.add_subcommand(
      "icl-diagnose", "Gradient-noise tails, Hessian-diagonal condition number and directional smoothness (JSON)");
  cmd->add_option("--checkpoint", a.checkpoint, "Checkpoint to diagnose")->required();
  cmd->add_option("--batches", a.batches, "Stochastic gradients to sample")->check(CLI::Range(4, 100000));
  cmd->add_option("--reference-tasks", a.reference_tasks, "Tasks of the fixed set for the full gradient and curvature")
      ->check(CLI::Range(1, 1 << 22));
  return cmd;
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
  if (!std::isfinite(d->full_loss) || !std::isfinite(d->full_grad_norm)) {  // JSON would print null: no result
    std::fprintf(stderr,
                 "rill icl-diagnose: the model's loss or gradient on the reference tasks is not finite (the "
                 "checkpoint's parameters or task distribution overflow its f32 arithmetic)\n");
    return 1;
  }
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
  std::printf("%s\n", json_text(j).c_str());
  return 0;
}

}  // namespace rill_cli
