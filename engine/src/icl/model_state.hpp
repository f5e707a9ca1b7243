// The models a trainer trains: a cohort of one or more models that share a shape and train in
// the same dispatches, each with its own parameters, optimizer moments, state words, loss ring
// and entry (seed, noise, optimizer hyperparameters). Every buffer is model-major
// (contract/icl.glsl), so one model's slices are contiguous.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "icl/checkpoint.hpp"
#include "rill/icl.hpp"
#include "rill/tensor.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill::icl::detail {

// Derived sizes of a configuration.
struct Shape {
  uint32_t d = 0, n = 0, layers = 0, heads = 0;
  uint32_t width = 0;        // d + 1
  uint32_t tokens = 0;       // n + 1
  uint32_t token_elems = 0;  // tokens * width
  uint32_t params = 0;
  static Shape of(const TrainConfig& c);
};

// The trained models (a cohort of one or more that share a shape) and their optimizer state,
// the GPU-side state words, the ring of (loss, grad norm) per step and the per-model entries
// (seed, noise, optimizer hyperparameters); every buffer model-major (contract/icl.glsl).
struct ModelState {
  uint32_t models = 1;
  uint32_t shape_params = 0;  // parameters per model
  Tensor params, moment1, moment2, state, history, entries;
  uint32_t history_capacity = 0;
  // Buffers for `configs` (one per model; they share `shape`), parameters drawn from each seed,
  // moments, state and ring zeroed.
  static Result<ModelState> create(Context& ctx, const Shape& shape, std::span<const TrainConfig> configs);

  // One model's parameters, moments and state words (a checkpoint's tensors), and back. The
  // buffers move whole: a cohort's are small.
  Result<Checkpoint> snapshot(Context& ctx, uint32_t model, const TrainConfig& config) const;
  Status restore(Context& ctx, uint32_t model, const Checkpoint& checkpoint) const;
  Result<std::vector<uint32_t>> all_state_words(Context& ctx) const;  // [models][kIclStateWords]
};

// What one model's state words and loss ring say after a run of steps: the records of the steps
// from `from` on are appended to `records` (none from an empty ring); `halted` is FailedPrecondition naming the step
// whose loss or gradient was not finite when that halted the model (kStop), else OK.
struct ModelProgress {
  int64_t step = 0;     // completed steps
  int64_t skipped = 0;  // batches skipped for non-finite values
  Status halted;
};
ModelProgress read_progress(std::span<const uint32_t> words, std::span<const float> ring, int64_t from,
                            std::vector<StepRecord>& records);

// A model's entry: its seed, noise and optimizer hyperparameters.
gpu::IclModelEntry model_entry(const TrainConfig& config);
// One entry that draws `config`'s tasks from another seed, optionally at one noise level, for
// evaluation-like draws (a one-model table: see SampleRequest::entries).
gpu::IclModelEntry sampling_entry(const TrainConfig& config, uint64_t seed, std::optional<float> fixed_sigma);
// A one-entry table on the device.
Result<Tensor> entry_table(Context& ctx, const gpu::IclModelEntry& entry);

}  // namespace rill::icl::detail
