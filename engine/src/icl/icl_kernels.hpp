// Records the ICL kernels (shaders/icl/) into sequences: task sampling, the layers' forward and
// backward, loss, the deterministic gradient reduction and the optimizer. The trainer composes
// them; everything about buffer layouts and launch geometry lives here.
#pragma once

#include <cstdint>

#include "rill/icl.hpp"
#include "rill/sequence.hpp"
#include "rill/tensor.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill::icl::detail {

// c in the per-task loss c (pred - y)^2: 1 (Ahn et al.) or 1/2 (Vladymyrov et al.).
float loss_factor(const TrainConfig& c);

// Derived sizes of a configuration.
struct Shape {
  uint32_t d = 0, n = 0, layers = 0, heads = 0;
  uint32_t width = 0;        // d + 1
  uint32_t tokens = 0;       // n + 1
  uint32_t token_elems = 0;  // tokens * width
  uint32_t params = 0;
  static Shape of(const TrainConfig& c);
};

// Per-batch activations, gradients and scratch (element-major, task-minor: see icl_model.glsl).
struct Workspace {
  uint32_t batch = 0;
  Tensor acts, targets, sigmas, mats, grad_a, grad_b, partials, task_loss, preds, reduced;
  static Result<Workspace> create(Context& ctx, const Shape& shape, uint32_t batch);
};

// The trained model and optimizer state, plus the trainer's GPU-side state words and the ring of
// (loss, grad norm) per step.
struct ModelState {
  Tensor params, moment1, moment2, state, history;
  uint32_t history_capacity = 0;
};

// A task set in device memory, trained on instead of sampled tasks (icl_gather).
struct DeviceTaskSet {
  Tensor tokens, targets, sigmas;  // task-major, as in the file
  uint32_t tasks = 0;
};

struct SampleRequest {
  uint64_t seed = 0;
  uint32_t stream_base = 0;   // 0: training batches; others: evaluation
  bool step_from_state = true;
  uint32_t step = 0;          // when !step_from_state
  std::optional<float> fixed_sigma;  // evaluation at one noise level
  uint32_t first_task = 0;           // the batch's first task index in the stream (evaluation in chunks)
};

class Recorder {
 public:
  Recorder(const TrainConfig& config, Shape shape);

  // Device limits (lavapipe's loop limit) for this configuration and batch.
  Status check_device(const Sequence& seq, uint32_t batch) const;

  Status sample(Sequence& seq, const Workspace& ws, const ModelState& m, const SampleRequest& request) const;
  Status forward(Sequence& seq, const Workspace& ws, const ModelState& m) const;
  Status loss(Sequence& seq, const Workspace& ws, bool with_gradient) const;
  Status backward(Sequence& seq, const Workspace& ws, const ModelState& m) const;
  Status reduce(Sequence& seq, const Workspace& ws) const;
  Status optimize(Sequence& seq, const Workspace& ws, const ModelState& m, uint32_t set_tasks) const;
  Status gather(Sequence& seq, const Workspace& ws, const ModelState& m, const DeviceTaskSet& set) const;

  // One whole training step: sample (or gather from `set`), forward, loss, backward, reduce, optimize.
  Status training_step(Sequence& seq, const Workspace& ws, const ModelState& m, const DeviceTaskSet* set) const;

 private:
  std::vector<SpecValue> model_spec(const Sequence& seq) const;
  uint32_t workgroup(const Sequence& seq) const;

  TrainConfig config_;
  Shape shape_;
  bool unrolled_ = false;  // small models use the layer kernels with unrolled loops
};

}  // namespace rill::icl::detail
