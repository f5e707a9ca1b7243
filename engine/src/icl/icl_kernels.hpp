// Records the ICL kernels (shaders/icl/) into sequences: task sampling, the layers' forward and
// backward (with the loss), the evaluation loss, the deterministic gradient reduction and the
// optimizer. The trainer composes them; everything about buffer layouts and launch geometry lives
// here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "icl/model_state.hpp"
#include "rill/icl.hpp"
#include "rill/sequence.hpp"
#include "rill/tensor.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill::icl::detail {

// c in the per-task loss c (pred - y)^2: 1 (Ahn et al.) or 1/2 (Vladymyrov et al.).
float loss_factor(const TrainConfig& c);

// Per-batch activations, gradients and scratch (element-major, task-minor: see icl_model.glsl)
// for `models` models of `model_tasks` tasks each, model m's tasks from slot m * model_stride on
// (the stride rounded up to whole workgroups when there are several models: contract/icl.glsl).
// `backward`: room for each layer's A and B, which the forward keeps for a backward pass; without
// (an evaluation) the forward leaves them out (IclLayerPush::save_mats) and mats is one element.
struct Workspace {
  uint32_t batch = 0;  // task slots in all: models * model_stride
  uint32_t models = 1, model_tasks = 0, model_stride = 0;
  bool backward = true;
  Tensor acts, targets, sigmas, mats, grad_a, grad_b, partials, task_loss, preds, reduced;
  static Result<Workspace> create(Context& ctx, const Shape& shape, uint32_t model_tasks, uint32_t models = 1,
                                  bool backward = true);
};

// A task set in device memory, trained on instead of sampled tasks (icl_gather).
struct DeviceTaskSet {
  Tensor tokens, targets, sigmas;  // task-major, as in the file
  uint32_t tasks = 0;
};

struct SampleRequest {
  const Tensor* entries = nullptr;  // the models' seeds and noise; nullptr: the trained models'
  uint32_t stream_base = 0;         // 0: training batches; others: evaluation
  bool step_from_state = true;
  uint32_t step = 0;        // when !step_from_state
  uint32_t first_task = 0;  // the batch's first task index in the stream (evaluation in chunks)
};

class Recorder {
 public:
  // `config` gives what a cohort's models share (shape, convention, data, optimizer kind); what
  // differs per model is read from the ModelState's entries.
  Recorder(const TrainConfig& config, Shape shape);

  // Device limits (lavapipe's loop limit, the largest binding) for this configuration and `models` x
  // `model_tasks` tasks; `backward`: with the buffers only training has (Workspace::create's). A
  // malformed RILL_ICL_UNROLL_LIMIT is refused here, where every trainer's creation looks.
  Status check_device(const Sequence& seq, uint32_t model_tasks, uint32_t models = 1, bool backward = true) const;

  Status sample(Sequence& seq, const Workspace& ws, const ModelState& m, const SampleRequest& request) const;
  Status forward(Sequence& seq, const Workspace& ws, const ModelState& m) const;
  // Each task's loss and prediction (task_loss, preds): evaluation. Training needs no call: its
  // backward computes them along with the gradient that seeds it.
  Status loss(Sequence& seq, const Workspace& ws) const;
  // Each task's loss and prediction, then the gradients: the input gradients layer by layer, each
  // task's parameter gradients into partials.
  Status backward(Sequence& seq, const Workspace& ws, const ModelState& m) const;
  Status reduce(Sequence& seq, const Workspace& ws) const;
  Status optimize(Sequence& seq, const Workspace& ws, const ModelState& m, uint32_t set_tasks) const;
  Status gather(Sequence& seq, const Workspace& ws, const ModelState& m, const DeviceTaskSet& set) const;

  // One whole training step: sample (or gather from `set`), forward, backward (with the loss), reduce,
  // optimize.
  Status training_step(Sequence& seq, const Workspace& ws, const ModelState& m, const DeviceTaskSet* set) const;

  // Whether this shape takes the unrolled layer kernels (RILL_ICL_UNROLL_LIMIT).
  bool unrolled() const { return unrolled_; }

 private:
  std::vector<SpecValue> model_spec(const Sequence& seq, uint32_t workgroup) const;
  // The layer kernels' variant, launch grid and specialization for this device (plan::icl_layers).
  struct LayerLaunch {
    std::string kernel;
    std::array<uint32_t, 3> groups{};
    std::vector<SpecValue> spec;
    uint32_t layers_per_dispatch = 1;
    bool query_top = false;  // the top layer computes only what the loss reads (QUERY_TOP)
    bool texel_reads = false;  // the `_tx` kernels (plan::IclLayersPlan::texel_reads)
  };
  // FLOPs of one layer's forward or backward over `tasks` tasks; `query`: the top layer computing
  // only what the loss reads.
  uint64_t layer_flops(uint64_t tasks, bool backward, bool query) const;
  Result<LayerLaunch> layer_launch(const Sequence& seq, const Workspace& ws, bool backward) const;
  // Loop iterations of one layer's forward and backward, a task per invocation (the longer loops).
  uint64_t layer_forward_iterations() const;
  uint64_t layer_backward_iterations() const;
  uint32_t workgroup(const Sequence& seq) const;

  TrainConfig config_;
  Shape shape_;
  bool unrolled_ = false;  // small models use the layer kernels with unrolled loops
  Status environment_;     // RILL_ICL_UNROLL_LIMIT as read: refused by check_device if malformed
};

}  // namespace rill::icl::detail
