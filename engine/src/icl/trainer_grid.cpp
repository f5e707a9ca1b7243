// TrainerGrid: many independent ICL models trained at once. Models are grouped into cohorts of
// one shape; a cohort's models share every dispatch (their buffers are model-major, see
// contract/icl.glsl), and the cohorts' steps are recorded phase by phase into one sequence.
#include <algorithm>

#include "core/host_memory_guard.hpp"
#include "icl/checkpoint.hpp"
#include "icl/config_json.hpp"
#include "icl/trainer_grid_impl.hpp"

namespace rill::icl {

namespace {
// Models of one cohort share the kernels' specialization and push constants: everything but
// the seed, the noise, the initialisation and the optimizer's hyperparameters.
bool same_cohort(const TrainConfig& a, const TrainConfig& b) {
  return a.task.d == b.task.d && a.task.n == b.task.n && a.task.data == b.task.data &&
         a.task.gamma_shape == b.task.gamma_shape && a.task.gamma_scale == b.task.gamma_scale &&
         a.model.layers == b.model.layers && a.model.heads == b.model.heads && a.model.param == b.model.param &&
         a.model.convention == b.model.convention && a.optimizer.kind == b.optimizer.kind && a.batch == b.batch;
}
}  // namespace

Result<TrainerGrid> TrainerGrid::create(Context& ctx, std::span<const TrainConfig> configs) {
  return rill::detail::host_memory_guarded("icl grid", [&]() -> Result<TrainerGrid> {
    if (configs.empty()) return invalid_argument("icl grid: no models");
    auto impl = std::make_unique<Impl>(ctx);
    Impl& g = *impl;
    g.configs.assign(configs.begin(), configs.end());
    for (size_t i = 0; i < configs.size(); ++i) {
      const TrainConfig& c = configs[i];
      if (Status s = validate(c); !s.is_ok())
        return invalid_argument("icl grid: model " + std::to_string(i) + ": " + s.message());
      if (c.read_every != configs.front().read_every)
        return invalid_argument("icl grid: model " + std::to_string(i) + " reads every " +
                                std::to_string(c.read_every) + " steps, model 0 every " +
                                std::to_string(configs.front().read_every) + "; a grid's models are read together");
      auto home = std::find_if(g.cohorts.begin(), g.cohorts.end(),
                               [&](const Cohort& k) { return same_cohort(configs[size_t(k.members.front())], c); });
      if (home == g.cohorts.end()) {
        g.places.push_back({g.cohorts.size(), 0});
        g.cohorts.emplace_back(c, int(i));
      } else {
        g.places.push_back({size_t(home - g.cohorts.begin()), uint32_t(home->members.size())});
        home->members.push_back(int(i));
      }
    }
    RILL_ASSIGN_OR_RETURN(Sequence seq, ctx.sequence({.label = "icl.grid_step"}));
    for (Cohort& k : g.cohorts) {
      std::vector<TrainConfig> members;
      for (int i : k.members) members.push_back(configs[size_t(i)]);
      const uint32_t models = uint32_t(members.size()), batch = uint32_t(members.front().batch);
      RILL_RETURN_IF_ERROR(k.recorder.check_device(seq, batch, models));
      RILL_ASSIGN_OR_RETURN(k.model, ModelState::create(ctx, k.shape, members));
      RILL_ASSIGN_OR_RETURN(k.workspace, Workspace::create(ctx, k.shape, batch, models));
    }
    // Phase by phase across cohorts: a GPU finds independent work next to each other.
    for (Cohort& k : g.cohorts) RILL_RETURN_IF_ERROR(k.recorder.sample(seq, k.workspace, k.model, {}));
    for (Cohort& k : g.cohorts) RILL_RETURN_IF_ERROR(k.recorder.forward(seq, k.workspace, k.model));
    for (Cohort& k : g.cohorts) RILL_RETURN_IF_ERROR(k.recorder.backward(seq, k.workspace, k.model));
    for (Cohort& k : g.cohorts) RILL_RETURN_IF_ERROR(k.recorder.reduce(seq, k.workspace));
    for (Cohort& k : g.cohorts) RILL_RETURN_IF_ERROR(k.recorder.optimize(seq, k.workspace, k.model, 0));
    RILL_RETURN_IF_ERROR(seq.finish());
    g.step_sequence.emplace(std::move(seq));
    g.progress.assign(configs.size(), {});
    return TrainerGrid(std::move(impl));
  });
}

namespace {
// A grid's models sample their tasks: a set-trained checkpoint would go on with other data.
Status sampled_tasks_only(const detail::Checkpoint& c, const std::string& path) {
  if (c.task_set.empty()) return Status::ok();
  return invalid_argument("icl grid: checkpoint '" + path + "' was trained on a task set (" + c.task_set +
                          "); a grid's models sample their tasks");
}
}  // namespace

Result<TrainerGrid> TrainerGrid::resume(Context& ctx, std::span<const std::string> paths) {
  return rill::detail::host_memory_guarded("icl grid resume", [&]() -> Result<TrainerGrid> {
    std::vector<detail::Checkpoint> saved;
    std::vector<TrainConfig> configs;
    for (const std::string& path : paths) {
      RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, detail::read_checkpoint(path));
      RILL_RETURN_IF_ERROR(sampled_tasks_only(c, path));
      configs.push_back(c.config);
      saved.push_back(std::move(c));
    }
    RILL_ASSIGN_OR_RETURN(TrainerGrid grid, create(ctx, configs));
    for (size_t i = 0; i < saved.size(); ++i) RILL_RETURN_IF_ERROR(grid.impl_->restore(int(i), saved[i]));
    return grid;
  });
}

Status TrainerGrid::load_checkpoint(int model, const std::string& path) {
  return rill::detail::host_memory_guarded("icl grid checkpoint load", [&]() -> Status {
    RILL_RETURN_IF_ERROR(impl_->check_model(model));
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, detail::read_checkpoint(path));
    RILL_RETURN_IF_ERROR(sampled_tasks_only(c, path));
    if (detail::config_to_json(c.config) != detail::config_to_json(impl_->configs[size_t(model)]))
      return invalid_argument("icl grid: checkpoint '" + path + "' holds another configuration than model " +
                              std::to_string(model) + "'s");
    return impl_->restore(model, c);
  });
}

TrainerGrid::TrainerGrid(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrainerGrid::TrainerGrid(TrainerGrid&&) noexcept = default;
TrainerGrid& TrainerGrid::operator=(TrainerGrid&&) noexcept = default;
TrainerGrid::~TrainerGrid() = default;

int TrainerGrid::models() const { return int(impl_->configs.size()); }
int TrainerGrid::cohorts() const { return int(impl_->cohorts.size()); }
Result<TrainConfig> TrainerGrid::config(int model) const {
  RILL_RETURN_IF_ERROR(impl_->check_model(model));
  return impl_->configs[size_t(model)];
}
int64_t TrainerGrid::step(int model) const {
  return impl_->check_model(model).is_ok() ? impl_->progress[size_t(model)].step : -1;
}
int64_t TrainerGrid::skipped_batches(int model) const {
  return impl_->check_model(model).is_ok() ? impl_->progress[size_t(model)].skipped : -1;
}
Status TrainerGrid::status(int model) const {
  RILL_RETURN_IF_ERROR(impl_->check_model(model));
  return impl_->progress[size_t(model)].halted;
}

Result<std::vector<std::vector<StepRecord>>> TrainerGrid::train(int64_t steps) {
  return rill::detail::host_memory_guarded("icl grid train", [&]() -> Result<std::vector<std::vector<StepRecord>>> {
    Impl& g = *impl_;
    if (steps < 0) return invalid_argument("icl grid train: steps must be >= 0");
    // After a failed call, where the device is (that call's records are lost with it), before the
    // range check below reads the steps.
    if (g.unread) {
      std::vector<std::vector<StepRecord>> lost(g.configs.size());
      RILL_RETURN_IF_ERROR(g.read_progress(false, lost));
    }
    for (const detail::ModelProgress& p : g.progress)
      if (steps > detail::kMaxSteps - p.step)
        return out_of_range("icl grid train: " + std::to_string(steps) + " more steps after " + std::to_string(p.step) +
                            " pass the step counter's range (" + std::to_string(detail::kMaxSteps) + ")");
    std::vector<std::vector<StepRecord>> curves(g.configs.size());
    const int64_t read_every = g.configs.front().read_every;
    for (int64_t left = steps; left > 0;) {
      const uint32_t run = uint32_t(std::min<int64_t>(left, read_every));
      g.unread = true;
      RILL_RETURN_IF_ERROR(g.step_sequence->run(run));
      left -= run;
      RILL_RETURN_IF_ERROR(g.read_progress(true, curves));
    }
    return curves;
  });
}

Result<std::vector<float>> TrainerGrid::parameters(int model) {
  return rill::detail::host_memory_guarded("icl grid parameters", [&]() -> Result<std::vector<float>> {
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, impl_->snapshot(model));
    return std::move(c.params);
  });
}

Status TrainerGrid::save_checkpoint(int model, const std::string& path) {
  return rill::detail::host_memory_guarded("icl grid checkpoint", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, impl_->snapshot(model));
    return detail::write_checkpoint(path, c);
  });
}

Result<Trainer> TrainerGrid::trainer(int model) {
  return rill::detail::host_memory_guarded("icl grid trainer", [&]() -> Result<Trainer> {
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, impl_->snapshot(model));
    RILL_ASSIGN_OR_RETURN(Trainer t, Trainer::create(impl_->ctx, c.config));
    RILL_RETURN_IF_ERROR(t.restore(c));
    return t;
  });
}

Result<EvalReport> TrainerGrid::evaluate(int model, const EvalOptions& options) {
  return rill::detail::host_memory_guarded("icl grid evaluate", [&]() -> Result<EvalReport> {
    // The model alone: a training batch's workspace and recorded step would go unused.
    RILL_ASSIGN_OR_RETURN(detail::Checkpoint c, impl_->snapshot(model));
    RILL_ASSIGN_OR_RETURN(Trainer t, Trainer::make(impl_->ctx, c.config, nullptr, /*training=*/false));
    RILL_RETURN_IF_ERROR(t.restore(c));
    t.impl_->baselines = impl_->baselines;  // models sharing a task distribution share its baselines
    return t.evaluate(options);
  });
}

}  // namespace rill::icl
