// The trainer's state, shared by its training (trainer.cpp) and evaluation (trainer_evaluation.cpp).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "access.hpp"
#include "icl/baseline_cache.hpp"
#include "icl/icl_kernels.hpp"
#include "rill/icl.hpp"

namespace rill::icl {

using detail::entry_table;
using detail::loss_factor;
using detail::ModelState;
using detail::Recorder;
using detail::sampling_entry;
using detail::Shape;
using detail::Workspace;

struct Trainer::Impl {
  Context ctx;  // shares the application's context: the trainer keeps the device alive
  TrainConfig config;
  Shape shape;
  Recorder recorder;
  ModelState model;
  Workspace workspace;
  std::optional<detail::DeviceTaskSet> train_set;
  std::string train_set_fingerprint;  // detail::task_set_fingerprint of it; empty: sampled tasks
  // Resumed without the set its checkpoint was trained on: evaluation and export work, training
  // is refused (it would sample other tasks), and a saved checkpoint still names the set.
  std::string missing_set;
  std::optional<Sequence> step_sequence;
  int64_t step = 0;
  int64_t skipped = 0;
  // A run was submitted and its progress not read (a failed download after it): the next train
  // or probe reads the device's step first (catch_up).
  bool unread = false;
  // Not ok once the model has halted (kStop): its counter stays at the halting step, so training
  // again would only replay that step's record; every later train returns this instead.
  Status halted = Status::ok();
  // Baselines of evaluations done; shared with the grid a trainer was copied from for evaluation.
  std::shared_ptr<detail::BaselineCache> baselines = std::make_shared<detail::BaselineCache>();

  Impl(const Context& c, const TrainConfig& cfg)
      : ctx(rill::detail::Access::share(c)), config(cfg), shape(Shape::of(cfg)), recorder(cfg, shape) {}
  // Where an unread run left the device: step, skipped batches and halt (its records are lost).
  Status catch_up();
  // Trains `steps` steps in runs of read_every, appending each run's records.
  Status train_runs(int64_t steps, std::vector<StepRecord>& records);
};

namespace detail {
// Loss, gradient and predictions of the current parameters on one batch: the sampled batch of
// `sampled_step`, or (nullopt) the task set's next batch. Changes nothing.
Result<Trainer::Probe> probe_batch(Trainer& trainer, std::optional<uint32_t> sampled_step);
// run_on without the baselines: the model's loss, gradient and predictions on `set` (and, if asked,
// its inputs element-major as the kernels read them). For diagnostics, which need only these.
Result<Trainer::TaskSetRun> model_run_on(Trainer& trainer, const TaskSet& set, std::vector<float>* inputs = nullptr);
// InvalidArgument naming `where` unless the set's tasks match the trainer's d and n.
Status check_task_set(const TaskSet& set, const Shape& s, const char* where);
}  // namespace detail

}  // namespace rill::icl
