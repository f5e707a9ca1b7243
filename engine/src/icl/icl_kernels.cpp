#include "icl/icl_kernels.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <string>

#include "icl_sampler.hpp"
#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "vk/spec_name.hpp"

namespace rill::icl::detail {
namespace {

constexpr uint32_t kTaskWorkgroup = 64;

float layer_scale(const TrainConfig& c) {
  return c.model.convention == Convention::kAhn ? 1.0f / float(c.task.n) : 1.0f;
}

}  // namespace

float loss_factor(const TrainConfig& c) { return c.model.convention == Convention::kAhn ? 1.0f : 0.5f; }

namespace {

// Task slots per model: whole workgroups when there are several models (contract/icl.glsl).
uint64_t task_stride(uint32_t model_tasks, uint32_t models) {
  return models == 1 ? model_tasks : (uint64_t(model_tasks) + kTaskWorkgroup - 1) / kTaskWorkgroup * kTaskWorkgroup;
}

}  // namespace

Result<Workspace> Workspace::create(Context& ctx, const Shape& s, uint32_t model_tasks, uint32_t models,
                                    bool backward) {
  const uint64_t stride = task_stride(model_tasks, models);
  if (models == 0 || model_tasks == 0 || models * stride >= (uint64_t(1) << 32))
    return invalid_argument("icl: " + std::to_string(models) + " models of " + std::to_string(model_tasks) +
                            " tasks do not fit a batch");
  Workspace ws;
  ws.models = models;
  ws.model_tasks = model_tasks;
  ws.model_stride = uint32_t(stride);
  ws.batch = uint32_t(models * stride);
  ws.backward = backward;
  const int64_t b = ws.batch, mat = int64_t(s.width) * s.width;
  auto make = [&](Tensor& t, int64_t elements, const char* name) -> Status {
    RILL_ASSIGN_OR_RETURN(t, ctx.tensor(DType::kF32, {elements}, std::string("icl.") + name));
    return Status::ok();
  };
  // What the backward and the gradient reduction read, in whole 4-element texels so that they may
  // read them as texel views (plan::IclLayersPlan::texel_reads); the last texel's spare elements
  // are never summed.
  auto texels = [](int64_t elements) { return (elements + 3) / 4 * 4; };
  RILL_RETURN_IF_ERROR(make(ws.acts, texels(int64_t(s.layers + 1) * s.token_elems * b), "acts"));
  RILL_RETURN_IF_ERROR(make(ws.targets, b, "targets"));
  RILL_RETURN_IF_ERROR(make(ws.sigmas, b, "sigmas"));
  // Without a backward pass (evaluation, sampling) the gradients' buffers are a token element each:
  // over half of a training workspace's memory.
  auto grads = [&](int64_t elements) { return backward ? elements : 1; };
  RILL_RETURN_IF_ERROR(make(ws.mats, texels(grads(int64_t(s.layers) * 2 * mat * b)), "mats"));
  RILL_RETURN_IF_ERROR(make(ws.grad_a, texels(grads(int64_t(s.token_elems) * b)), "grad_a"));
  RILL_RETURN_IF_ERROR(make(ws.grad_b, texels(grads(int64_t(s.token_elems) * b)), "grad_b"));
  RILL_RETURN_IF_ERROR(make(ws.partials, texels(grads(int64_t(s.params) * b)), "partials"));
  RILL_RETURN_IF_ERROR(make(ws.task_loss, b, "task_loss"));
  RILL_RETURN_IF_ERROR(make(ws.preds, b, "preds"));
  RILL_RETURN_IF_ERROR(make(ws.reduced, (int64_t(s.params) + 1) * models, "reduced"));
  return ws;
}

namespace {

// Multiply-adds per task of a layer's backward, unrolled, up to which the unrolled layer kernels
// are used; RILL_ICL_UNROLL_LIMIT overrides it (0: never unroll). A value that is not a whole
// number ("-1", "abc") is refused by name, as the other RILL_* variables are.
Result<uint64_t> unroll_limit() {
  constexpr uint64_t kDefault = 16000;
  const char* env = std::getenv("RILL_ICL_UNROLL_LIMIT");
  if (env == nullptr) return kDefault;
  uint64_t v = 0;
  const std::string_view text(env);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return invalid_argument("RILL_ICL_UNROLL_LIMIT='" + std::string(text) +
                            "' is not a whole number of multiply-adds (the default is " + std::to_string(kDefault) +
                            "; 0: never unroll)");
  return v;
}

}  // namespace

Recorder::Recorder(const TrainConfig& config, Shape shape) : config_(config), shape_(shape) {
  // Fully unrolled layer kernels keep each task in registers; rolled, lavapipe indexes the private
  // arrays lane by lane. Measured on lavapipe: setting 1 of Ahn et al. (~3,300 multiply-adds per
  // task and layer backward) 1.5x faster unrolled, compiled in ~5 s; Vladymyrov et al.'s d = 10
  // (~14,000) 3.1x faster, but its first compile takes LLVM ~50 s (Mesa caches it on disk;
  // .ci/timing/icl-staged-backward.txt).
  // LLVM's time grows much faster than the code, so bigger models stay rolled.
  const uint64_t w = shape.width, t = shape.tokens;
  const uint64_t per_head = config.model.param == Parameterization::kFull ? 5 * w * w * w : 3 * w * w;
  const Result<uint64_t> limit = unroll_limit();
  environment_ = limit.status();
  unrolled_ = limit.is_ok() && 3 * t * w * w + shape.heads * per_head <= limit.value();
}

std::vector<SpecValue> Recorder::model_spec(const Sequence&, uint32_t workgroup) const {
  return {gpu::spec("WG_SIZE", workgroup), gpu::spec("D1", shape_.width), gpu::spec("NCTX", shape_.n),
          gpu::spec("HEADS", shape_.heads), gpu::spec("PARAM", uint32_t(config_.model.param))};
}

uint32_t Recorder::workgroup(const Sequence& seq) const { return ops::detail::reduction_workgroup(seq); }

uint64_t Recorder::layer_forward_iterations() const {
  const uint64_t w = shape_.width, t = shape_.tokens, n = shape_.n, h = shape_.heads;
  const uint64_t head_fwd = config_.model.param == Parameterization::kFull ? 2 * w * w * w : w * w;
  return w * w * n + h * head_fwd + t * w * w + 4 * w * w;
}

uint64_t Recorder::layer_backward_iterations() const {
  const uint64_t w = shape_.width, t = shape_.tokens, h = shape_.heads;
  const uint64_t head_bwd = config_.model.param == Parameterization::kFull ? 5 * w * w * w : 3 * w * w;
  return t * w * w + h * head_bwd + 2 * t * w * w + 4 * w * w;
}

Status Recorder::check_device(const Sequence& seq, uint32_t model_tasks, uint32_t models, bool backward) const {
  RILL_RETURN_IF_ERROR(environment_);
  const uint64_t batch = task_stride(model_tasks, models) * models;
  const uint64_t w = shape_.width, t = shape_.tokens, n = shape_.n, d = shape_.d;
  const char* op = "icl";
  // One layer per dispatch at least (the plan fuses more where the budget allows).
  RILL_RETURN_IF_ERROR(
      ops::detail::check_loop_budget(seq, layer_forward_iterations(), op, "a layer's forward (lower d, n or heads)"));
  RILL_RETURN_IF_ERROR(
      ops::detail::check_loop_budget(seq, layer_backward_iterations(), op, "a layer's backward (lower d, n or heads)"));
  // Sampling: ~50 loop iterations per Philox call and transform, 16 Gamma attempts at worst.
  const uint64_t gamma = config_.task.data == DataKind::kHeavyTailed ? 16 * 60 : 0;
  RILL_RETURN_IF_ERROR(ops::detail::check_loop_budget(seq, t * (((d + 3) / 4) * 60 + 2 * d + gamma) + n * 16, op,
                                                      "sampling one task (lower d or n)"));
  RILL_RETURN_IF_ERROR(ops::detail::check_loop_budget(seq, (model_tasks + workgroup(seq) - 1) / workgroup(seq), op,
                                                      "the gradient reduction (lower the batch)"));
  const uint64_t per_thread = (shape_.params + workgroup(seq) - 1) / workgroup(seq);
  RILL_RETURN_IF_ERROR(ops::detail::check_loop_budget(seq, 2 * per_thread, op, "the optimizer (fewer parameters)"));
  // Per task: the activations of every layer; training also keeps each layer's matrices and the
  // per-task gradients.
  uint64_t biggest = uint64_t(shape_.layers + 1) * shape_.token_elems;
  if (backward)
    biggest = std::max<uint64_t>(biggest, std::max<uint64_t>(uint64_t(shape_.layers) * 2 * w * w, shape_.params + 1));
  if (biggest * batch >= (uint64_t(1) << 32))
    return out_of_range("icl: batch " + std::to_string(batch) + " is too large for this model (buffers past 2^32 elements)");
  // Checked before anything is allocated: recording would refuse the binding after gigabytes were.
  const uint64_t range = seq.device().caps.max_storage_buffer_range;
  if (range != 0 && biggest * batch * sizeof(float) > range)
    return out_of_range("icl: batch " + std::to_string(batch) + " needs a buffer of " +
                        std::to_string(biggest * batch * sizeof(float)) +
                        " bytes, more than this device binds (maxStorageBufferRange " + std::to_string(range) +
                        "); lower the batch");
  return Status::ok();
}

Status Recorder::sample(Sequence& seq, const Workspace& ws, const ModelState& m, const SampleRequest& r) const {
  const TaskConfig& task = config_.task;
  const auto g = ref::icl::gamma_constants(task.gamma_shape, task.gamma_scale);
  gpu::IclSamplePush p{};
  p.batch = ws.batch;
  p.model_tasks = ws.model_tasks;
  p.model_stride = ws.model_stride;
  p.first_task = r.first_task;
  p.step = r.step;
  p.use_state_step = r.step_from_state ? 1 : 0;
  p.d = shape_.d;
  p.n = shape_.n;
  p.data_kind = uint32_t(task.data);
  p.stream_base = r.stream_base;
  p.gamma_shape = g.shape;
  p.gamma_scale = g.scale;
  p.gamma_inv_shape = g.inv_shape;
  p.gamma_mt_d = g.mt_d;
  p.gamma_mt_c = g.mt_c;
  const bool per_token = ops::plan::icl_sample_per_token(ops::plan::traits_of(seq), shape_.tokens);
  std::array<uint32_t, 3> groups = ops::detail::groups_for(ws.batch, kTaskWorkgroup);
  if (per_token) groups[2] = shape_.tokens;
  // Round-to-nearest-even declared where the device can: the CPU twin's rounding, guaranteed.
  return seq.dispatch(
      {.kernel = seq.device().caps.rounding_rte_f32 ? "icl/icl_sample_rte" : "icl/icl_sample",
       .bindings = {&m.state, r.entries != nullptr ? r.entries : &m.entries, &ws.acts, &ws.targets, &ws.sigmas},
       .push = push_bytes(p),
       .groups = groups,
       .spec = {gpu::spec("WG_SIZE", kTaskWorkgroup), gpu::spec("PER_TOKEN", per_token)},
       .label = "icl.sample",
       .bytes = uint64_t(ws.batch) * (shape_.token_elems + 2) * 4});
}

namespace {

// A layer kernel's specialization for a dispatch of `layers` layers, `query_top` when it holds the
// model's top layer computing only what the loss reads (LAYERS and QUERY_TOP in icl_model.glsl).
std::vector<SpecValue> with_layers(std::vector<SpecValue> spec, uint32_t layers, bool query_top) {
  spec.push_back(gpu::spec("LAYERS", layers));
  spec.push_back(gpu::spec("QUERY_TOP", query_top));
  return spec;
}

}  // namespace

Result<Recorder::LayerLaunch> Recorder::layer_launch(const Sequence& seq, const Workspace& ws, bool backward) const {
  RILL_ASSIGN_OR_RETURN(
      const ops::plan::IclLayersPlan plan,
      ops::plan::icl_layers(ops::plan::traits_of(seq),
                            {.width = shape_.width,
                             .tokens = shape_.tokens,
                             .tasks = ws.batch,
                             .model_tasks = ws.model_tasks,
                             .layers = shape_.layers,
                             .layer_params = shape_.params / shape_.layers,  // parameter_count: per layer alike
                             .layer_iterations = std::max(layer_forward_iterations(), layer_backward_iterations())}));
  const char* pass = backward ? "icl/icl_layer_bwd" : "icl/icl_layer_fwd";
  LayerLaunch l;
  l.layers_per_dispatch = plan.layers_per_dispatch;
  l.query_top = plan.query_top_layer;
  if (plan.workgroup_per_task) {
    const uint32_t tasks = plan.tasks_per_workgroup;
    l.kernel = std::string(pass) + "_wg";
    l.groups = ops::detail::groups_for(ws.batch, tasks);
    l.spec = model_spec(seq, plan.workgroup * tasks);
    l.spec.push_back(gpu::spec("TASKS", tasks));
    l.spec.push_back(gpu::spec("BS", plan.output_block));
  } else {
    l.kernel = std::string(pass) + (unrolled_ ? "_unrolled" : "") + (plan.texel_reads ? "_tx" : "");
    l.texel_reads = plan.texel_reads;
    l.groups = ops::detail::groups_for(ws.batch, kTaskWorkgroup);
    l.spec = model_spec(seq, kTaskWorkgroup);
  }
  return l;
}

uint64_t Recorder::layer_flops(uint64_t tasks, bool backward, bool query) const {
  const uint64_t w = shape_.width, t = shape_.tokens, n = shape_.n, h = shape_.heads;
  const bool full = config_.model.param == Parameterization::kFull;
  if (!backward) {
    // A's upper triangle over the context; per head A Q and P (A Q) (query: its last row); B x.
    const uint64_t head = full ? (query ? 2 * w * w * w + 2 * w * w : 4 * w * w * w) : (query ? 3 * w : 3 * w * w);
    return tasks * (w * (w + 1) * n + h * head + (query ? 2 * w : 2 * t * w * w));
  }
  // dB, B^T G and (dA + dA^T) x over the tokens (query: dB and B^T G one slot each); per head dB
  // Q^T, dP and P^T dB (query: a row, a row and one term per entry) and dQ, dA in full.
  const uint64_t tokens = query ? 4 * w + 2 * t * w * w : 6 * t * w * w;
  const uint64_t head = full ? (query ? 4 * w * w * w + 6 * w * w : 10 * w * w * w) : 8 * w * w;
  return tasks * (tokens + h * head);
}

Status Recorder::forward(Sequence& seq, const Workspace& ws, const ModelState& m) const {
  RILL_ASSIGN_OR_RETURN(const LayerLaunch launch, layer_launch(seq, ws, false));
  const uint64_t w = shape_.width;
  for (uint32_t l = 0; l < shape_.layers; l += launch.layers_per_dispatch) {
    const uint32_t count = std::min(launch.layers_per_dispatch, shape_.layers - l);
    uint64_t flops = 0;
    const bool query_top = launch.query_top && l + count == shape_.layers;  // the dispatch's last layer
    for (uint32_t k = l; k < l + count; ++k) flops += layer_flops(ws.batch, false, query_top && k + 1 == shape_.layers);
    // The `_tx` kernels read the input tokens through a texel view of acts (binding 3).
    std::vector<const Tensor*> bindings = {&m.params, &ws.acts, &ws.mats};
    if (launch.texel_reads) bindings.push_back(&ws.acts);
    RILL_RETURN_IF_ERROR(
        seq.dispatch({.kernel = launch.kernel,
                      .bindings = std::move(bindings),
                      .push = push_bytes(gpu::IclLayerPush{ws.batch, ws.model_tasks, ws.model_stride, shape_.params, l,
                                                           layer_scale(config_), 0, 0.0f,
                                                           ws.backward ? 1u : 0u}),  // A and B kept for a backward pass
                      .groups = launch.groups,
                      .spec = with_layers(launch.spec, count, query_top),
                      .label = "icl.layer_fwd",
                      .flops = flops,
                      .bytes = uint64_t(ws.batch) *
                               ((count + 1) * shape_.token_elems + (ws.backward ? 2 * count * w * w : 0)) * 4}));
  }
  return Status::ok();
}

Status Recorder::loss(Sequence& seq, const Workspace& ws) const {
  return seq.dispatch({.kernel = "icl/icl_loss",
                       .bindings = {&ws.acts, &ws.targets, &ws.task_loss, &ws.preds},
                       .push = push_bytes(gpu::IclLossPush{ws.batch, ws.model_tasks, ws.model_stride, shape_.layers,
                                                           loss_factor(config_)}),
                       .groups = ops::detail::groups_for(ws.batch, kTaskWorkgroup),
                       .spec = model_spec(seq, kTaskWorkgroup),
                       .label = "icl.loss",
                       .bytes = uint64_t(ws.batch) * 4 * 4});
}

Status Recorder::backward(Sequence& seq, const Workspace& ws, const ModelState& m) const {
  if (!ws.backward) return failed_precondition("icl: a backward pass on a workspace made without room for one");
  RILL_ASSIGN_OR_RETURN(const LayerLaunch launch, layer_launch(seq, ws, true));
  const uint64_t w = shape_.width;
  // The first dispatch, which holds the top layer, computes each task's loss and the gradient that
  // seeds the pass (LOSS_SEED); each later one reads the gradient of its top layer's output, and
  // each writes its bottom layer's input gradient (none for layer 0), alternating the two buffers.
  bool odd = false;
  for (uint32_t top = shape_.layers; top > 0; odd = !odd) {
    const uint32_t count = std::min(launch.layers_per_dispatch, top);
    const uint32_t bottom = top - count;
    const Tensor& g_out = odd ? ws.grad_b : ws.grad_a;
    const Tensor& g_in = odd ? ws.grad_a : ws.grad_b;
    uint64_t flops = 0;
    const bool seed = top == shape_.layers;
    const bool query_top = launch.query_top && seed;  // the dispatch's first layer
    for (uint32_t k = bottom; k < top; ++k) flops += layer_flops(ws.batch, true, query_top && k + 1 == shape_.layers);
    std::vector<SpecValue> spec = with_layers(launch.spec, count, query_top);
    spec.push_back(gpu::spec("LOSS_SEED", seed));
    // Read: each layer's tokens and A and B, the output gradient (or the output's label slot and the
    // target); written: the input gradient, and with the seed each task's loss and prediction.
    const uint64_t gradient_in = seed ? 2 : shape_.token_elems, gradient_out = bottom > 0 ? shape_.token_elems : 0;
    RILL_RETURN_IF_ERROR(seq.dispatch(
        {.kernel = launch.kernel,
         .bindings = {&m.params, &ws.acts, &ws.mats, &g_out, &g_in, &ws.partials, &ws.targets, &ws.task_loss,
                      &ws.preds},
         .push = push_bytes(gpu::IclLayerPush{ws.batch, ws.model_tasks, ws.model_stride, shape_.params, top - 1,
                                              layer_scale(config_), bottom > 0 ? 1u : 0u, loss_factor(config_), 0}),
         .groups = launch.groups,
         .spec = std::move(spec),
         .label = "icl.layer_bwd",
         .flops = flops,
         .bytes = uint64_t(ws.batch) *
                  (count * (shape_.token_elems + 4 * w * w) + gradient_in + gradient_out + (seed ? 2 : 0)) * 4}));
    top = bottom;
  }
  return Status::ok();
}

Status Recorder::reduce(Sequence& seq, const Workspace& ws) const {
  if (!ws.backward) return failed_precondition("icl: a gradient reduction on a workspace made without room for one");
  const uint32_t wg = workgroup(seq);
  const uint64_t outputs = uint64_t(shape_.params + 1) * ws.models;  // a workgroup each
  // Where the layers read as texels (CPU drivers), the partials are read as texels too.
  RILL_ASSIGN_OR_RETURN(const LayerLaunch launch, layer_launch(seq, ws, true));
  const std::string variant = ops::detail::reduction_variant(seq);
  const bool texels = launch.texel_reads && variant.empty();
  return seq.dispatch(
      {.kernel = "icl/icl_grad_reduce" + (texels ? std::string("_tx") : variant),
       .bindings = {&ws.partials, &ws.task_loss, &ws.reduced},
       .push = push_bytes(gpu::IclReducePush{shape_.params, ws.model_tasks, ws.model_stride, ws.models}),
       .groups = ops::detail::grid_for(outputs),
       .spec = {gpu::spec("WG_SIZE", wg)},
       .label = "icl.grad_reduce",
       .flops = outputs * ws.model_tasks,
       .bytes = outputs * ws.model_tasks * 4});
}

Status Recorder::gather(Sequence& seq, const Workspace& ws, const ModelState& m, const DeviceTaskSet& set) const {
  // The set's cursor is one state word: a task set feeds a single model.
  if (m.models != 1)
    return failed_precondition("icl: a task set trains one model, not a cohort of " + std::to_string(m.models));
  return seq.dispatch(
      {.kernel = "icl/icl_gather",
       .bindings = {&m.state, &set.tokens, &set.targets, &set.sigmas, &ws.acts, &ws.targets, &ws.sigmas},
       .push = push_bytes(gpu::IclGatherPush{ws.batch, set.tasks, shape_.token_elems}),
       .groups = ops::detail::groups_for(ws.batch, kTaskWorkgroup),
       .spec = {gpu::spec("WG_SIZE", kTaskWorkgroup)},
       .label = "icl.gather",
       .bytes = uint64_t(ws.batch) * (shape_.token_elems + 2) * 8});
}

Status Recorder::optimize(Sequence& seq, const Workspace& ws, const ModelState& m, uint32_t set_tasks) const {
  const bool sgd = config_.optimizer.kind == OptimizerKind::kSgd;
  gpu::IclOptimizePush p{shape_.params, m.history_capacity, set_tasks, ws.model_tasks};
  return seq.dispatch(
      {.kernel = "icl/icl_optimize" + std::string(ops::detail::reduction_variant(seq)),
       .bindings = {&m.state, &m.entries, &ws.reduced, &m.params, &m.moment1, &m.moment2, &m.history},
       .push = push_bytes(p),
       .groups = {m.models, 1, 1},
       .spec = {gpu::spec("WG_SIZE", workgroup(seq)), gpu::spec("OPTIMIZER", sgd ? gpu::kIclSgd : gpu::kIclAdam)},
       .label = "icl.optimize",
       .flops = uint64_t(shape_.params) * 12 * m.models,
       .bytes = uint64_t(shape_.params) * 6 * 4 * m.models});
}

Status Recorder::training_step(Sequence& seq, const Workspace& ws, const ModelState& m, const DeviceTaskSet* set) const {
  if (set != nullptr)
    RILL_RETURN_IF_ERROR(gather(seq, ws, m, *set));
  else
    RILL_RETURN_IF_ERROR(sample(seq, ws, m, {}));
  RILL_RETURN_IF_ERROR(forward(seq, ws, m));
  RILL_RETURN_IF_ERROR(backward(seq, ws, m));
  RILL_RETURN_IF_ERROR(reduce(seq, ws));
  return optimize(seq, ws, m, set != nullptr ? set->tasks : 0);
}

}  // namespace rill::icl::detail
