// TrainerGrid's state (trainer_grid.cpp), in a header so that tests reach it through detail::Access.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "icl/trainer_impl.hpp"

namespace rill::icl {

// Named, not anonymous: TrainerGrid::Impl holds these, and a class with external linkage may not
// hold types of an anonymous namespace once a unity build includes this file into another.
namespace grid_parts {

struct Cohort {
  std::vector<int> members;  // grid indices of its models, in model order
  Shape shape;
  Recorder recorder;
  ModelState model;
  Workspace workspace;
  Cohort(const TrainConfig& first, int member) : members{member}, shape(Shape::of(first)), recorder(first, shape) {}
};

struct Place {
  size_t cohort = 0;
  uint32_t model = 0;  // within the cohort
};

}  // namespace grid_parts
using grid_parts::Cohort;
using grid_parts::Place;

struct TrainerGrid::Impl {
  Context ctx;
  std::vector<TrainConfig> configs;
  std::vector<Cohort> cohorts;
  std::vector<Place> places;  // per grid model
  std::vector<detail::ModelProgress> progress;
  std::optional<Sequence> step_sequence;
  bool unread = false;  // as Trainer::Impl's: a run's progress not read yet
  std::shared_ptr<detail::BaselineCache> baselines = std::make_shared<detail::BaselineCache>();

  explicit Impl(const Context& c) : ctx(rill::detail::Access::share(c)) {}

  // Every running model's progress from the state words, its records appended to curves[model]
  // (with_records: from the loss rings); clears `unread`.
  Status read_progress(bool with_records, std::vector<std::vector<StepRecord>>& curves) {
    for (const Cohort& k : cohorts) {
      RILL_ASSIGN_OR_RETURN(std::vector<uint32_t> words, k.model.all_state_words(ctx));
      std::vector<float> rings;
      if (with_records) {
        RILL_ASSIGN_OR_RETURN(rings, ctx.download_floats(k.model.history));
      }
      const size_t ring = with_records ? size_t(k.model.history_capacity) * 2 : 0;
      for (size_t m = 0; m < k.members.size(); ++m) {
        const size_t i = size_t(k.members[m]);
        // A halted model's counter stays at its halted step, whose record was read when it halted
        // (or before a checkpoint): reading again would repeat it in every later read.
        if (!progress[i].halted.is_ok()) continue;
        progress[i] = detail::read_progress({words.data() + m * gpu::kIclStateWords, gpu::kIclStateWords},
                                            {rings.data() + m * ring, ring}, progress[i].step, curves[i]);
      }
    }
    unread = false;
    return Status::ok();
  }

  Status check_model(int model) const {
    if (model < 0 || size_t(model) >= configs.size())
      return out_of_range("icl grid: model " + std::to_string(model) + " of " + std::to_string(configs.size()));
    return Status::ok();
  }

  Status restore(int model, const detail::Checkpoint& c) {
    const Place& at = places[size_t(model)];
    // Read first: it may run out of host memory, and a restored model must not keep the old step.
    if (c.state.size() != gpu::kIclStateWords)
      return invalid_argument("icl grid: a checkpoint state of " + std::to_string(c.state.size()) + " words, not " +
                              std::to_string(gpu::kIclStateWords));
    std::vector<StepRecord> none;
    detail::ModelProgress restored = detail::read_progress(c.state, {}, 0, none);
    RILL_RETURN_IF_ERROR(cohorts[at.cohort].model.restore(ctx, at.model, c));
    progress[size_t(model)] = std::move(restored);
    return Status::ok();
  }

  // The model's tensors and configuration, as a checkpoint holds them.
  Result<detail::Checkpoint> snapshot(int model) {
    RILL_RETURN_IF_ERROR(check_model(model));
    const Place& at = places[size_t(model)];
    return cohorts[at.cohort].model.snapshot(ctx, at.model, configs[size_t(model)]);
  }
};

}  // namespace rill::icl
