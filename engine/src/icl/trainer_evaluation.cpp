// The trainer's evaluation: the current model and the baselines (ridge oracle, least squares,
// constant ridge, AdaRR, TunedRR) on fresh tasks or a given task set, and task sets drawn by the
// GPU sampler for other implementations.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/parallel_for.hpp"
#include "icl/ridge.hpp"
#include "icl/trainer_impl.hpp"

namespace rill::icl {

using detail::check_task_set;

// The model's and the baselines' summed losses over tasks whose inputs are `acts` (element-major,
// task-minor, as the kernels store them), added to `report`. Without sigmas the ridge oracle is NaN.
namespace {
// acts hold `stride` tasks, of which the first `tasks` are scored. Tasks are scored in parallel
// into per-task losses, then summed in task order: the sums do not depend on the thread count.
void add_losses(EvalReport& report, const Shape& s, double c, const std::vector<float>& acts, uint32_t stride,
                uint32_t tasks, const std::vector<float>& preds, const std::vector<float>& targets,
                const std::vector<float>* sigmas, const EvalOptions& options) {
  constexpr size_t kLosses = 6;  // model, ridge oracle, least squares, constant ridge, ADARR, TUNEDRR
  std::vector<double> losses(size_t(tasks) * kLosses);
  rill::detail::parallel_for(tasks, 512, [&](size_t begin, size_t end) {
    std::vector<float> task_tokens(s.token_elems);
    for (size_t t = begin; t < end; ++t) {
      for (uint32_t e = 0; e < s.token_elems; ++e) task_tokens[e] = acts[size_t(e) * stride + t];
      const TaskView view{int(s.d), int(s.n), task_tokens.data()};
      const double oracle_lambda = sigmas ? double((*sigmas)[t]) * (*sigmas)[t] : 0.0;
      const BaselinePredictions b = baseline_predictions(view, oracle_lambda, options.constant_lambda,
                                                         options.tunedrr_factor, options.tunedrr_cap);
      const double y = targets[t];
      auto loss = [&](double pred) { return c * (pred - y) * (pred - y); };
      double* out = &losses[t * kLosses];
      out[0] = loss(preds[t]);
      out[1] = sigmas ? loss(b.ridge_oracle) : NAN;
      out[2] = loss(b.least_squares);
      out[3] = loss(b.ridge_constant);
      out[4] = loss(b.adarr);
      out[5] = loss(b.tunedrr);
    }
  });
  report.tasks += int(tasks);
  double* sums[kLosses] = {&report.model,          &report.ridge_oracle, &report.least_squares,
                           &report.ridge_constant, &report.adarr,        &report.tunedrr};
  for (size_t t = 0; t < tasks; ++t)
    for (size_t k = 0; k < kLosses; ++k) *sums[k] += losses[t * kLosses + k];
}

// Sums to means, with the TUNEDRR settings used.
EvalReport mean_losses(EvalReport report, const EvalOptions& options) {
  report.tunedrr_factor = options.tunedrr_factor;
  report.tunedrr_cap = options.tunedrr_cap;
  for (double* v : {&report.model, &report.ridge_oracle, &report.least_squares, &report.ridge_constant, &report.adarr,
                    &report.tunedrr})
    *v /= report.tasks;
  return report;
}

EvalReport score(const Shape& s, double c, const std::vector<float>& acts, uint32_t tasks,
                 const std::vector<float>& preds, const std::vector<float>& targets, const std::vector<float>* sigmas,
                 const EvalOptions& options) {
  EvalReport report;
  add_losses(report, s, c, acts, tasks, tasks, preds, targets, sigmas, options);
  return mean_losses(report, options);
}

// Evaluation runs in chunks of this many tasks: memory and the device's loop limits stay bounded at
// the papers' 100,000 tasks, and each chunk's tasks are those of the whole draw (first_task).
constexpr uint32_t kEvalChunk = 8192;
// The sampler's stream base of evaluation-like draws: disjoint from the training batches' (0).
constexpr uint32_t kEvalStream = 16;
}  // namespace

// The options with TUNEDRR's factor and cap tuned on fresh tasks, when asked for.
Result<EvalOptions> Trainer::with_tuned_baselines(const EvalOptions& options) {
  if (!options.tune_tunedrr) return options;
  if (options.tuning_tasks < 1) return invalid_argument("icl evaluate: tuning_tasks must be >= 1");
  RILL_ASSIGN_OR_RETURN(TaskSet tuning,
                        sample_task_set(options.tuning_tasks, options.seed ^ 0x7E5700D5ull, options.sigma));
  const size_t per_task = size_t(tuning.n + 1) * (tuning.d + 1);
  std::vector<TaskView> views;
  for (int64_t t = 0; t < tuning.tasks; ++t) views.push_back({tuning.d, tuning.n, tuning.tokens.data() + t * per_task});
  const TunedRR tuned = tune_tunedrr(views, tuning.targets);
  EvalOptions out = options;
  out.tunedrr_factor = tuned.factor;
  out.tunedrr_cap = tuned.cap;
  return out;
}

Result<Trainer::TaskSetRun> Trainer::run_on(const TaskSet& set, const EvalOptions& requested) {
  RILL_ASSIGN_OR_RETURN(const EvalOptions options, with_tuned_baselines(requested));
  Impl& im = *impl_;
  const Shape& s = im.shape;
  RILL_RETURN_IF_ERROR(check_task_set(set, s, "icl run_on"));
  const uint32_t tasks = uint32_t(set.tasks);
  RILL_ASSIGN_OR_RETURN(Sequence seq, im.ctx.sequence({.label = "icl.run_on"}));
  RILL_RETURN_IF_ERROR(im.recorder.check_device(seq, tasks));
  RILL_ASSIGN_OR_RETURN(Workspace ws, Workspace::create(im.ctx, s, tasks));
  // The layer-0 slice of acts holds the inputs, element-major and task-minor.
  std::vector<float> acts(ws.acts.element_count(), 0.0f);
  for (uint32_t t = 0; t < tasks; ++t)
    for (uint32_t e = 0; e < s.token_elems; ++e)
      acts[size_t(e) * tasks + t] = set.tokens[size_t(t) * s.token_elems + e];
  RILL_RETURN_IF_ERROR(im.ctx.upload_floats(ws.acts, acts));
  RILL_RETURN_IF_ERROR(im.ctx.upload_floats(ws.targets, set.targets));
  RILL_RETURN_IF_ERROR(im.recorder.forward(seq, ws, im.model));
  RILL_RETURN_IF_ERROR(im.recorder.backward(seq, ws, im.model));
  RILL_RETURN_IF_ERROR(im.recorder.reduce(seq, ws));
  RILL_ASSIGN_OR_RETURN(DownloadId reduced, seq.download(ws.reduced));
  RILL_ASSIGN_OR_RETURN(DownloadId preds_id, seq.download(ws.preds));
  RILL_RETURN_IF_ERROR(seq.run());
  TaskSetRun out;
  RILL_ASSIGN_OR_RETURN(out.gradient, seq.read_floats(reduced));
  out.loss = out.gradient.back();
  out.gradient.pop_back();
  RILL_ASSIGN_OR_RETURN(out.predictions, seq.read_floats(preds_id));
  out.report = score(s, loss_factor(im.config), acts, tasks, out.predictions, set.targets,
                     set.sigmas.empty() ? nullptr : &set.sigmas, options);
  return out;
}

Result<TaskSet> Trainer::sample_task_set(int tasks, uint64_t seed, std::optional<float> sigma) {
  Impl& im = *impl_;
  if (tasks < 1 || tasks >= (1 << 24)) return invalid_argument("icl sample_task_set: tasks must be in [1, 2^24)");
  const Shape& s = im.shape;
  RILL_ASSIGN_OR_RETURN(Sequence seq, im.ctx.sequence({.label = "icl.sample_task_set"}));
  RILL_RETURN_IF_ERROR(im.recorder.check_device(seq, uint32_t(tasks)));
  RILL_ASSIGN_OR_RETURN(Workspace ws, Workspace::create(im.ctx, s, uint32_t(tasks)));
  RILL_ASSIGN_OR_RETURN(Tensor entry, entry_table(im.ctx, sampling_entry(im.config, seed, sigma)));
  RILL_RETURN_IF_ERROR(im.recorder.sample(
      seq, ws, im.model, {.entries = &entry, .stream_base = kEvalStream, .step_from_state = false, .step = 0}));
  RILL_ASSIGN_OR_RETURN(DownloadId acts_id, seq.download(ws.acts));
  RILL_ASSIGN_OR_RETURN(DownloadId targets_id, seq.download(ws.targets));
  RILL_ASSIGN_OR_RETURN(DownloadId sigmas_id, seq.download(ws.sigmas));
  RILL_RETURN_IF_ERROR(seq.run());
  RILL_ASSIGN_OR_RETURN(std::vector<float> acts, seq.read_floats(acts_id));
  TaskSet set{.d = int(s.d), .n = int(s.n), .tasks = tasks, .tokens = {}, .targets = {}, .sigmas = {}};
  set.tokens.resize(size_t(tasks) * s.token_elems);
  for (uint32_t t = 0; t < uint32_t(tasks); ++t)
    for (uint32_t e = 0; e < s.token_elems; ++e)
      set.tokens[size_t(t) * s.token_elems + e] = acts[size_t(e) * tasks + t];
  RILL_ASSIGN_OR_RETURN(set.targets, seq.read_floats(targets_id));
  RILL_ASSIGN_OR_RETURN(set.sigmas, seq.read_floats(sigmas_id));
  return set;
}

Result<EvalReport> Trainer::evaluate(const EvalOptions& requested) {
  RILL_ASSIGN_OR_RETURN(const EvalOptions options, with_tuned_baselines(requested));
  Impl& im = *impl_;
  if (options.tasks < 1) return invalid_argument("icl evaluate: tasks must be >= 1");
  if (options.sigma && !(std::isfinite(*options.sigma) && *options.sigma >= 0.0f))
    return invalid_argument("icl evaluate: sigma must be finite and >= 0");
  const uint32_t tasks = uint32_t(options.tasks), chunk = std::min(tasks, kEvalChunk);
  RILL_ASSIGN_OR_RETURN(Workspace ws, Workspace::create(im.ctx, im.shape, chunk, 1, /*backward=*/false));
  RILL_ASSIGN_OR_RETURN(Tensor entry, entry_table(im.ctx, sampling_entry(im.config, options.seed, options.sigma)));
  EvalReport sums;
  for (uint32_t first = 0; first < tasks; first += chunk) {
    RILL_ASSIGN_OR_RETURN(Sequence seq, im.ctx.sequence({.label = "icl.evaluate"}));
    RILL_RETURN_IF_ERROR(im.recorder.check_device(seq, chunk));
    RILL_RETURN_IF_ERROR(im.recorder.sample(
        seq, ws, im.model,
        {.entries = &entry, .stream_base = kEvalStream, .step_from_state = false, .step = 0, .first_task = first}));
    RILL_ASSIGN_OR_RETURN(DownloadId inputs, seq.download(ws.acts));
    RILL_RETURN_IF_ERROR(im.recorder.forward(seq, ws, im.model));
    RILL_RETURN_IF_ERROR(im.recorder.loss(seq, ws));
    RILL_ASSIGN_OR_RETURN(DownloadId preds_id, seq.download(ws.preds));
    RILL_ASSIGN_OR_RETURN(DownloadId targets_id, seq.download(ws.targets));
    RILL_ASSIGN_OR_RETURN(DownloadId sigmas_id, seq.download(ws.sigmas));
    RILL_RETURN_IF_ERROR(seq.run());
    RILL_ASSIGN_OR_RETURN(std::vector<float> acts, seq.read_floats(inputs));
    RILL_ASSIGN_OR_RETURN(std::vector<float> preds, seq.read_floats(preds_id));
    RILL_ASSIGN_OR_RETURN(std::vector<float> targets, seq.read_floats(targets_id));
    RILL_ASSIGN_OR_RETURN(std::vector<float> sigmas, seq.read_floats(sigmas_id));
    // The last chunk fills a whole workspace too; only its first tasks - first tasks are scored.
    add_losses(sums, im.shape, loss_factor(im.config), acts, chunk, std::min(chunk, tasks - first), preds, targets,
               &sigmas, options);
  }
  return mean_losses(sums, options);
}

}  // namespace rill::icl
