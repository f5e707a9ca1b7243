// The ICL trainer: owns the model, optimizer state and one batch workspace, records the training
// step once and replays it; reads losses every read_every steps; checkpoints. Evaluation is in
// trainer_evaluation.cpp.
#include <algorithm>
#include <cmath>
#include <new>

#include "core/host_memory_guard.hpp"
#include "icl/checkpoint.hpp"
#include "icl/task_set.hpp"
#include "icl/trainer_impl.hpp"

namespace rill::icl {

namespace {

Result<detail::DeviceTaskSet> upload_task_set(Context& ctx, const TaskSet& set) {
  detail::DeviceTaskSet d;
  d.tasks = uint32_t(set.tasks);
  RILL_ASSIGN_OR_RETURN(d.tokens, ctx.tensor(DType::kF32, {int64_t(set.tokens.size())}, "icl.set_tokens", MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(d.targets, ctx.tensor(DType::kF32, {set.tasks}, "icl.set_targets", MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(d.sigmas, ctx.tensor(DType::kF32, {set.tasks}, "icl.set_sigmas", MemoryPool::kWeights));
  RILL_RETURN_IF_ERROR(ctx.upload_floats(d.tokens, set.tokens));
  RILL_RETURN_IF_ERROR(ctx.upload_floats(d.targets, set.targets));
  RILL_RETURN_IF_ERROR(ctx.upload_floats(d.sigmas, set.sigmas.empty() ? std::vector<float>(size_t(set.tasks), 0.0f) : set.sigmas));
  return d;
}

}  // namespace

Status detail::check_task_set(const TaskSet& set, const Shape& s, const char* where) {
  if (set.d != int(s.d) || set.n != int(s.n))
    return invalid_argument(std::string(where) + ": the task set has d=" + std::to_string(set.d) +
                            ", n=" + std::to_string(set.n) + "; the model is for d=" + std::to_string(s.d) +
                            ", n=" + std::to_string(s.n));
  return detail::check_task_set_contents(set, where);
}

Result<Trainer> Trainer::create(Context& ctx, const TrainConfig& config, const TaskSet* train_tasks) {
  return rill::detail::host_memory_guarded(
      "icl trainer", [&]() -> Result<Trainer> { return make(ctx, config, train_tasks, /*training=*/true); });
}

Result<Trainer> Trainer::make(Context& ctx, const TrainConfig& config, const TaskSet* train_tasks, bool training) {
  RILL_RETURN_IF_ERROR(validate(config));
  auto impl = std::make_unique<Impl>(ctx, config);
  const Shape& s = impl->shape;
  if (training) {
    RILL_ASSIGN_OR_RETURN(Sequence probe, ctx.sequence());
    RILL_RETURN_IF_ERROR(impl->recorder.check_device(probe, uint32_t(config.batch)));
  }
  RILL_ASSIGN_OR_RETURN(impl->model, ModelState::create(ctx, s, {&config, 1}));
  if (!training) return Trainer(std::move(impl));  // evaluation sizes its own workspaces
  const ModelState& m = impl->model;
  RILL_ASSIGN_OR_RETURN(impl->workspace, Workspace::create(ctx, s, uint32_t(config.batch)));
  if (train_tasks != nullptr) {
    RILL_RETURN_IF_ERROR(detail::check_task_set(*train_tasks, s, "icl trainer"));
    RILL_ASSIGN_OR_RETURN(impl->train_set, upload_task_set(ctx, *train_tasks));
    impl->train_set_fingerprint = detail::task_set_fingerprint(*train_tasks);
  }
  RILL_ASSIGN_OR_RETURN(Sequence seq, ctx.sequence({.label = "icl.training_step"}));
  RILL_RETURN_IF_ERROR(
      impl->recorder.training_step(seq, impl->workspace, m, impl->train_set ? &*impl->train_set : nullptr));
  RILL_RETURN_IF_ERROR(seq.finish());
  impl->step_sequence.emplace(std::move(seq));
  return Trainer(std::move(impl));
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
Trainer::~Trainer() = default;

const TrainConfig& Trainer::config() const { return impl_->config; }
int64_t Trainer::step() const { return impl_->step; }
int64_t Trainer::skipped_batches() const { return impl_->skipped; }

Result<std::vector<StepRecord>> Trainer::train(int64_t steps) {
  std::vector<StepRecord> records;
  RILL_RETURN_IF_ERROR(train_into(steps, records));
  return records;
}

Status Trainer::Impl::catch_up() {
  if (!unread) return Status::ok();
  // The records of the failed call's runs are lost with it; its steps count.
  RILL_ASSIGN_OR_RETURN(std::vector<uint32_t> state, model.all_state_words(ctx));
  std::vector<StepRecord> lost;
  const detail::ModelProgress progress = detail::read_progress(state, {}, step, lost);
  step = progress.step;
  skipped = progress.skipped;
  unread = false;
  halted = progress.halted;
  return Status::ok();
}

namespace {
Status curve_exhausted(size_t records) {
  return resource_exhausted("icl train: no host memory for more than " + std::to_string(records) +
                            " step records (train in shorter calls; the steps taken count)");
}
}  // namespace

Status Trainer::train_into(int64_t steps, std::vector<StepRecord>& records) {
  return rill::detail::host_memory_guarded("icl train", [&]() -> Status {
    Impl& im = *impl_;
    if (steps < 0) return invalid_argument("icl train: steps must be >= 0");
    if (!im.step_sequence) return failed_precondition("icl train: this trainer was made to evaluate only");
    RILL_RETURN_IF_ERROR(im.catch_up());
    RILL_RETURN_IF_ERROR(im.halted);
    if (!im.missing_set.empty())
      return failed_precondition("icl train: this model was trained on a task set (" + im.missing_set +
                                 "); resume it with that set to train on");
    if (steps > detail::kMaxSteps - im.step)
      return out_of_range("icl train: " + std::to_string(steps) + " more steps after " + std::to_string(im.step) +
                          " pass the step counter's range (" + std::to_string(detail::kMaxSteps) + ")");
    // Geometric growth: callers append run after run to one curve (an exact reserve copied it each
    // time). Room for at most a million records up front: a call of billions of steps grows its curve
    // as it trains, and one that outgrows the host's memory reports so instead of aborting.
    constexpr int64_t kReserveSteps = int64_t(1) << 20;
    try {
      const size_t wanted = records.size() + size_t(std::min(steps, kReserveSteps));
      if (records.capacity() < wanted) records.reserve(std::max(wanted, 2 * records.capacity()));
    } catch (const std::bad_alloc&) {
      return curve_exhausted(records.size());
    }
    return im.train_runs(steps, records);
  });
}

Status Trainer::Impl::train_runs(int64_t steps, std::vector<StepRecord>& records) {
  for (int64_t left = steps; left > 0;) {
    const uint32_t run = uint32_t(std::min<int64_t>(left, config.read_every));
    unread = true;
    RILL_RETURN_IF_ERROR(step_sequence->run(run));
    left -= run;
    RILL_ASSIGN_OR_RETURN(std::vector<uint32_t> state, model.all_state_words(ctx));
    RILL_ASSIGN_OR_RETURN(std::vector<float> ring, ctx.download_floats(model.history));
    const size_t before = records.size();
    detail::ModelProgress progress;
    try {
      progress = detail::read_progress(state, ring, step, records);
    } catch (const std::bad_alloc&) {
      records.resize(before);  // no partial run: the next call catches up with the device's step
      return curve_exhausted(before);
    }
    step = progress.step;
    skipped = progress.skipped;
    unread = false;
    halted = progress.halted;
    RILL_RETURN_IF_ERROR(halted);
  }
  return Status::ok();
}

Result<std::vector<float>> Trainer::parameters() { return impl_->ctx.download_floats(impl_->model.params); }

Status Trainer::set_parameters(std::span<const float> values) {
  return rill::detail::host_memory_guarded("icl set_parameters", [&]() -> Status {
    if (values.size() != impl_->shape.params)
      return invalid_argument("icl set_parameters: expected " + std::to_string(impl_->shape.params) + " values, got " +
                              std::to_string(values.size()));
    // A NaN or inf would halt the next step (or have every batch skipped) and evaluate to NaN.
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        return invalid_argument("icl set_parameters: value " + std::to_string(i) + " is not finite");
    return impl_->ctx.upload_floats(impl_->model.params, values);
  });
}

Result<Trainer::Probe> detail::probe_batch(Trainer& trainer, std::optional<uint32_t> sampled_step) {
  auto& im = rill::detail::Access::impl_of(trainer);
  if (!im.step_sequence) return failed_precondition("icl probe: this trainer was made to evaluate only");
  RILL_ASSIGN_OR_RETURN(Sequence seq, im.ctx.sequence({.label = "icl.probe"}));
  if (sampled_step)
    RILL_RETURN_IF_ERROR(
        im.recorder.sample(seq, im.workspace, im.model, {.step_from_state = false, .step = *sampled_step}));
  else
    RILL_RETURN_IF_ERROR(im.recorder.gather(seq, im.workspace, im.model, *im.train_set));
  RILL_RETURN_IF_ERROR(im.recorder.forward(seq, im.workspace, im.model));
  RILL_RETURN_IF_ERROR(im.recorder.backward(seq, im.workspace, im.model));
  RILL_RETURN_IF_ERROR(im.recorder.reduce(seq, im.workspace));
  RILL_ASSIGN_OR_RETURN(DownloadId reduced, seq.download(im.workspace.reduced));
  RILL_ASSIGN_OR_RETURN(DownloadId preds, seq.download(im.workspace.preds));
  RILL_RETURN_IF_ERROR(seq.run());
  RILL_ASSIGN_OR_RETURN(std::vector<float> r, seq.read_floats(reduced));
  Trainer::Probe out;
  out.loss = r.back();
  r.pop_back();
  out.gradient = std::move(r);
  RILL_ASSIGN_OR_RETURN(out.predictions, seq.read_floats(preds));
  return out;
}

Result<Trainer::Probe> Trainer::probe(int64_t step) {
  return rill::detail::host_memory_guarded("icl probe", [&]() -> Result<Probe> {
    Impl& im = *impl_;
    if (step < 0 || step > UINT32_MAX) return invalid_argument("icl probe: step out of range");
    if (!im.train_set && im.missing_set.empty()) return detail::probe_batch(*this, uint32_t(step));
    // A set's batches follow its cursor, which only the next step's batch is known from.
    if (!im.missing_set.empty())
      return failed_precondition("icl probe: this model was trained on a task set (" + im.missing_set +
                                 "); resume it with that set to probe its batches");
    RILL_RETURN_IF_ERROR(im.catch_up());  // the set's cursor is where the device's step is
    if (step != im.step)
      return invalid_argument("icl probe: a trainer on a task set probes the batch of its next step (" +
                              std::to_string(im.step) + "), not step " + std::to_string(step));
    return detail::probe_batch(*this, std::nullopt);
  });
}

Status Trainer::save_checkpoint(const std::string& path) {
  return rill::detail::host_memory_guarded("icl checkpoint", [&]() -> Status {
    Impl& im = *impl_;
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, im.model.snapshot(im.ctx, 0, im.config));
    c.task_set = im.train_set_fingerprint.empty() ? im.missing_set : im.train_set_fingerprint;
    return detail::write_checkpoint(path, c);
  });
}

Result<Trainer> Trainer::resume(Context& ctx, const std::string& path, const TaskSet* train_tasks) {
  return rill::detail::host_memory_guarded("icl resume", [&]() -> Result<Trainer> {
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, detail::read_checkpoint(path));
    // The same training set as before, or none: another set (or a set where the tasks were sampled)
    // would train on other data than the run so far. Without its set, a set-trained model may be
    // evaluated or exported but not trained on (train() refuses).
    const std::string given = train_tasks != nullptr ? detail::task_set_fingerprint(*train_tasks) : "";
    if (!given.empty() && given != c.task_set)
      return invalid_argument("icl checkpoint '" + path + "': it was trained on " +
                              (c.task_set.empty() ? "tasks sampled on the device" : "a task set (" + c.task_set + ")") +
                              ", and the resume is given another task set (" + given + ")");
    if (train_tasks != nullptr && c.state[gpu::kIclStateSetCursor] >= uint64_t(train_tasks->tasks))
      return invalid_argument("icl checkpoint '" + path + "': its task-set position is past the given set's end");
    RILL_ASSIGN_OR_RETURN(Trainer t, create(ctx, c.config, train_tasks));
    RILL_RETURN_IF_ERROR(t.restore(c));
    if (given.empty()) t.impl_->missing_set = c.task_set;
    return t;
  });
}

Status Trainer::restore(const detail::Checkpoint& c) {
  Impl& im = *impl_;
  RILL_RETURN_IF_ERROR(im.model.restore(im.ctx, 0, c));
  im.step = int64_t(c.state[gpu::kIclStateStep]);
  im.skipped = int64_t(c.state[gpu::kIclStateSkipped]);
  im.unread = false;
  std::vector<StepRecord> none;  // a halted checkpoint's halting record was read before it was saved
  im.halted = detail::read_progress(c.state, {}, 0, none).halted;
  return Status::ok();
}

}  // namespace rill::icl
