// The trainer's evaluation: the current model and the baselines (ridge oracle, least squares,
// constant ridge, AdaRR, TunedRR) on fresh tasks or a given task set, and task sets drawn by the
// GPU sampler for other implementations.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "core/host_memory_guard.hpp"
#include "core/parallel_for.hpp"
#include "icl/baseline_cache.hpp"
#include "icl/ridge.hpp"
#include "icl/sigma_rule.hpp"
#include "icl/trainer_impl.hpp"

namespace rill::icl {

using detail::check_task_set;

namespace {
// One task's loss in the model's convention (c: its factor), in double from the float values.
double task_loss(double c, float pred, float target) {
  const double diff = double(pred) - double(target);
  return c * diff * diff;
}

// The model's and the baselines' summed losses over tasks whose inputs are `acts` (element-major,
// task-minor, as the kernels store them), added to `report`. Without sigmas (an empty span) the
// ridge oracle is NaN. acts hold `stride` tasks, of which the first `tasks` are scored. Tasks are
// scored in parallel into per-task losses, then summed in task order: the sums do not depend on
// the thread count.
void add_losses(EvalReport& report, const Shape& s, double c, std::span<const float> acts, uint32_t stride,
                uint32_t tasks, std::span<const float> preds, std::span<const float> targets,
                std::span<const float> sigmas, const EvalOptions& options) {
  constexpr size_t kLosses = 6;  // model, ridge oracle, least squares, constant ridge, ADARR, TUNEDRR
  // Tasks gathered to the reference layout together: acts run task-minor, so a block's element
  // reads one cache line (one task at a time would touch a line per element).
  constexpr size_t kBlock = 16;
  const size_t elems = s.token_elems;
  std::vector<double> losses(size_t(tasks) * kLosses);
  rill::detail::parallel_for(tasks, 512, [&](size_t begin, size_t end) {
    BaselineScorer scorer;
    std::vector<float> block(kBlock * elems);
    for (size_t first = begin; first < end; first += kBlock) {
      const size_t count = std::min(kBlock, end - first);
      for (size_t e = 0; e < elems; ++e)
        for (size_t j = 0; j < count; ++j) block[j * elems + e] = acts[e * stride + first + j];
      for (size_t j = 0; j < count; ++j) {
        const size_t t = first + j;
        const TaskView view{int(s.d), int(s.n), block.data() + j * elems};
        const double oracle_lambda = sigmas.empty() ? 0.0 : double(sigmas[t]) * sigmas[t];
        const BaselinePredictions b = scorer.predictions(view, oracle_lambda, options.constant_lambda,
                                                         options.tunedrr_factor, options.tunedrr_cap);
        const double y = targets[t];
        auto loss = [&](double pred) { return c * (pred - y) * (pred - y); };  // a baseline's, in double
        double* out = &losses[t * kLosses];
        out[0] = task_loss(c, preds[t], targets[t]);
        out[1] = sigmas.empty() ? NAN : loss(b.ridge_oracle);
        out[2] = loss(b.least_squares);
        out[3] = loss(b.ridge_constant);
        out[4] = loss(b.adarr);
        out[5] = loss(b.tunedrr);
      }
    }
  });
  report.tasks += int(tasks);
  double* sums[kLosses] = {&report.model,          &report.ridge_oracle, &report.least_squares,
                           &report.ridge_constant, &report.adarr,        &report.tunedrr};
  for (size_t t = 0; t < tasks; ++t)
    for (size_t k = 0; k < kLosses; ++k) *sums[k] += losses[t * kLosses + k];
}

// The model's summed loss alone, added to `report` in task order as add_losses adds it.
void add_model_losses(EvalReport& report, double c, uint32_t tasks, std::span<const float> preds,
                      std::span<const float> targets) {
  report.tasks += int(tasks);
  for (uint32_t t = 0; t < tasks; ++t) report.model += task_loss(c, preds[t], targets[t]);
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

EvalReport score(const Shape& s, double c, std::span<const float> acts, uint32_t tasks, std::span<const float> preds,
                 std::span<const float> targets, std::span<const float> sigmas, const EvalOptions& options) {
  EvalReport report;
  add_losses(report, s, c, acts, tasks, tasks, preds, targets, sigmas, options);
  return mean_losses(report, options);
}

// Evaluation runs in chunks of this many tasks: memory and the device's loop limits stay bounded at
// the papers' 100,000 tasks, and each chunk's tasks are those of the whole draw (first_task).
constexpr uint32_t kEvalChunk = 4096;
// The sampler's stream base of evaluation-like draws: disjoint from the training batches' (0).
constexpr uint32_t kEvalStream = 16;

// The first `elems` floats of a tensor (a 1-D view): the sampled inputs are layer 0 of acts.
Result<Tensor> leading(const Tensor& t, uint64_t elems) { return t.rows(0, int64_t(elems)); }

Status read_into(const Sequence& seq, DownloadId id, std::vector<float>& out) {
  return seq.read(id, {reinterpret_cast<uint8_t*>(out.data()), out.size() * sizeof(float)});
}

// One chunk of an evaluation on the device: the workspace it samples into and runs, the sequence
// doing it and what that sequence downloads. Two take turns, so that the device samples and runs
// one chunk while the host scores the one before (the host's ridge solves are most of the work).
struct EvalSlot {
  Workspace ws;
  Tensor inputs;  // layer 0 of ws.acts
  std::optional<Sequence> seq;
  DownloadId inputs_id, preds_id, targets_id, sigmas_id;
};

// A chunk's downloads on the host, reused from chunk to chunk; the tasks' inputs and noise only
// for scoring the baselines (`scored` tasks of room, else none).
struct EvalHostChunk {
  std::vector<float> acts, sigmas, preds, targets;
  EvalHostChunk(const Shape& s, uint32_t scored, uint32_t chunk)
      : acts(size_t(s.token_elems) * scored), sigmas(scored), preds(chunk), targets(chunk) {}
};
}  // namespace

// Every number of the options before anything is sampled with them: a NaN or negative lambda made
// ridge a pseudo-inverse or a zero prediction, a NaN sigma no noise, silently.
namespace {
Status check_eval_options(const EvalOptions& o, const char* where) {
  auto refuse = [&](const std::string& what) { return invalid_argument(std::string(where) + ": " + what); };
  if (o.tasks < 1) return refuse("tasks must be >= 1");
  if (o.tune_tunedrr && o.tuning_tasks < 1) return refuse("tuning_tasks must be >= 1");
  if (o.sigma && !detail::sigma_allowed(*o.sigma)) return refuse(std::string("sigma must be ") + detail::kSigmaRule);
  if (!(std::isfinite(o.constant_lambda) && o.constant_lambda >= 0.0))
    return refuse("constant_lambda must be finite and >= 0");
  if (!o.tune_tunedrr && !(std::isfinite(o.tunedrr_factor) && o.tunedrr_factor > 0.0 && std::isfinite(o.tunedrr_cap) &&
                           o.tunedrr_cap > 0.0))
    return refuse("tunedrr_factor and tunedrr_cap must be finite and > 0");
  return Status::ok();
}
}  // namespace

// The options with TUNEDRR's factor and cap tuned on fresh tasks, when asked for.
Result<EvalOptions> Trainer::with_tuned_baselines(const EvalOptions& options) {
  if (!options.tune_tunedrr) return options;
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

Result<Trainer::TaskSetRun> detail::model_run_on(Trainer& trainer, const TaskSet& set, std::vector<float>* inputs) {
  auto& im = rill::detail::Access::impl_of(trainer);
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
  Trainer::TaskSetRun out;
  RILL_ASSIGN_OR_RETURN(out.gradient, seq.read_floats(reduced));
  out.loss = out.gradient.back();
  out.gradient.pop_back();
  RILL_ASSIGN_OR_RETURN(out.predictions, seq.read_floats(preds_id));
  if (inputs != nullptr) *inputs = std::move(acts);
  return out;
}

Result<Trainer::TaskSetRun> Trainer::run_on(const TaskSet& set, const EvalOptions& requested) {
  return rill::detail::host_memory_guarded("icl run_on", [&]() -> Result<Trainer::TaskSetRun> {
    RILL_RETURN_IF_ERROR(check_eval_options(requested, "icl run_on"));
    Impl& im = *impl_;
    RILL_RETURN_IF_ERROR(check_task_set(set, im.shape, "icl run_on"));  // before the baselines' tuning
    RILL_ASSIGN_OR_RETURN(const EvalOptions options, with_tuned_baselines(requested));
    std::vector<float> acts;
    RILL_ASSIGN_OR_RETURN(TaskSetRun out, detail::model_run_on(*this, set, &acts));
    out.report = score(im.shape, loss_factor(im.config), acts, uint32_t(set.tasks), out.predictions, set.targets,
                       set.sigmas, options);
    return out;
  });
}

Result<TaskSet> Trainer::sample_task_set(int tasks, uint64_t seed, std::optional<float> sigma) {
  return rill::detail::host_memory_guarded("icl sample_task_set", [&]() -> Result<TaskSet> {
    Impl& im = *impl_;
    if (tasks < 1 || tasks >= (1 << 24)) return invalid_argument("icl sample_task_set: tasks must be in [1, 2^24)");
    if (sigma && !detail::sigma_allowed(*sigma))
      return invalid_argument(std::string("icl sample_task_set: sigma must be ") + detail::kSigmaRule);
    const Shape& s = im.shape;
    RILL_ASSIGN_OR_RETURN(Sequence seq, im.ctx.sequence({.label = "icl.sample_task_set"}));
    RILL_RETURN_IF_ERROR(im.recorder.check_device(seq, uint32_t(tasks), 1, /*backward=*/false));
    // Sampling only: no room for a backward pass's layer matrices and per-task gradients.
    RILL_ASSIGN_OR_RETURN(Workspace ws, Workspace::create(im.ctx, s, uint32_t(tasks), 1, /*backward=*/false));
    RILL_ASSIGN_OR_RETURN(Tensor entry, entry_table(im.ctx, sampling_entry(im.config, seed, sigma)));
    RILL_RETURN_IF_ERROR(im.recorder.sample(
        seq, ws, im.model, {.entries = &entry, .stream_base = kEvalStream, .step_from_state = false, .step = 0}));
    RILL_ASSIGN_OR_RETURN(Tensor inputs, leading(ws.acts, uint64_t(s.token_elems) * uint32_t(tasks)));
    RILL_ASSIGN_OR_RETURN(DownloadId acts_id, seq.download(inputs));
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
  });
}

Result<EvalReport> Trainer::evaluate(const EvalOptions& requested) {
  return rill::detail::host_memory_guarded("icl evaluate", [&]() -> Result<EvalReport> {
    RILL_RETURN_IF_ERROR(check_eval_options(requested, "icl evaluate"));
    Impl& im = *impl_;
    // Baselines already scored on these tasks (an earlier evaluation with these options) are taken
    // as they were: then the device samples and runs the model, and the host only sums its loss.
    const detail::BaselineKey key{im.config.task, im.config.model.convention, requested};
    const EvalReport* known = im.baselines->find(key);
    EvalOptions options = requested;
    if (known == nullptr) {
      RILL_ASSIGN_OR_RETURN(options, with_tuned_baselines(requested));
    }
    const Shape& s = im.shape;
    const double c = loss_factor(im.config);
    const uint32_t tasks = uint32_t(options.tasks), chunk = std::min(tasks, kEvalChunk);
    const uint32_t chunks = (tasks + chunk - 1) / chunk;
    {  // before the workspaces are allocated
      RILL_ASSIGN_OR_RETURN(Sequence probe, im.ctx.sequence({.label = "icl.evaluate"}));
      RILL_RETURN_IF_ERROR(im.recorder.check_device(probe, chunk, 1, /*backward=*/false));
    }
    RILL_ASSIGN_OR_RETURN(Tensor entry, entry_table(im.ctx, sampling_entry(im.config, options.seed, options.sigma)));
    std::vector<EvalSlot> slots(std::min(chunks, 2u));
    for (EvalSlot& slot : slots) {
      RILL_ASSIGN_OR_RETURN(slot.ws, Workspace::create(im.ctx, s, chunk, 1, /*backward=*/false));
      RILL_ASSIGN_OR_RETURN(slot.inputs, leading(slot.ws.acts, uint64_t(s.token_elems) * chunk));
    }
    // Records and submits chunk `k` (tasks from k * chunk on; the last fills a whole workspace too).
    auto launch = [&](EvalSlot& slot, uint32_t k) -> Status {
      RILL_ASSIGN_OR_RETURN(Sequence seq, im.ctx.sequence({.label = "icl.evaluate"}));
      RILL_RETURN_IF_ERROR(im.recorder.check_device(seq, chunk, 1, /*backward=*/false));
      RILL_RETURN_IF_ERROR(im.recorder.sample(seq, slot.ws, im.model,
                                              {.entries = &entry,
                                               .stream_base = kEvalStream,
                                               .step_from_state = false,
                                               .step = 0,
                                               .first_task = k * chunk}));
      if (known == nullptr) {
        RILL_ASSIGN_OR_RETURN(slot.inputs_id, seq.download(slot.inputs));
        RILL_ASSIGN_OR_RETURN(slot.sigmas_id, seq.download(slot.ws.sigmas));
      }
      RILL_RETURN_IF_ERROR(im.recorder.forward(seq, slot.ws, im.model));
      RILL_RETURN_IF_ERROR(im.recorder.loss(seq, slot.ws));
      RILL_ASSIGN_OR_RETURN(slot.preds_id, seq.download(slot.ws.preds));
      RILL_ASSIGN_OR_RETURN(slot.targets_id, seq.download(slot.ws.targets));
      RILL_RETURN_IF_ERROR(seq.submit());
      slot.seq = std::move(seq);
      return Status::ok();
    };
    for (uint32_t k = 0; k < slots.size(); ++k) RILL_RETURN_IF_ERROR(launch(slots[k], k));
    EvalHostChunk host(s, known == nullptr ? chunk : 0, chunk);
    EvalReport sums;
    for (uint32_t k = 0; k < chunks; ++k) {
      EvalSlot& slot = slots[k % slots.size()];
      const Sequence& seq = *slot.seq;
      RILL_RETURN_IF_ERROR(slot.seq->wait());
      RILL_RETURN_IF_ERROR(read_into(seq, slot.preds_id, host.preds));
      RILL_RETURN_IF_ERROR(read_into(seq, slot.targets_id, host.targets));
      if (known == nullptr) {
        RILL_RETURN_IF_ERROR(read_into(seq, slot.inputs_id, host.acts));
        RILL_RETURN_IF_ERROR(read_into(seq, slot.sigmas_id, host.sigmas));
      }
      slot.seq.reset();
      if (k + slots.size() < chunks) RILL_RETURN_IF_ERROR(launch(slot, k + uint32_t(slots.size())));
      const uint32_t scored = std::min(chunk, tasks - k * chunk);
      if (known == nullptr)
        add_losses(sums, s, c, host.acts, chunk, scored, host.preds, host.targets, host.sigmas, options);
      else
        add_model_losses(sums, c, scored, host.preds, host.targets);
    }
    if (known != nullptr) {
      EvalReport report = *known;
      report.model = sums.model / sums.tasks;
      return report;
    }
    const EvalReport report = mean_losses(sums, options);
    im.baselines->store(key, report);
    return report;
  });
}

}  // namespace rill::icl
