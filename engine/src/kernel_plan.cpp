// Kernel plans (kernel_plan.hpp): the one place that reads device traits to choose kernels. This file
// has the traits and the summaries; the forced choices' keys are in kernel_plan_keys.cpp and each op
// family's plans in kernel_plan_{norm,matmul,attention,models}.cpp.
#include "kernel_plan.hpp"

#include <algorithm>

#include "access.hpp"
#include "kernel_plan_util.hpp"
#include "sequence_impl.hpp"
#include "vk/quirks.hpp"

namespace rill::ops::plan {

std::string_view family_name(Family f) { return f == Family::kCpu ? "cpu" : "gpu"; }

std::string_view algorithm_name(LinearAttentionAlgorithm a) {
  switch (a) {
    case LinearAttentionAlgorithm::kRegisterScan:
      return "register scan";
    case LinearAttentionAlgorithm::kChunkedSerial:
      return "chunked, serial over chunks";
    case LinearAttentionAlgorithm::kChunkedParallel:
      return "chunked, parallel over chunks";
  }
  return "?";
}

DeviceTraits traits_of(const DeviceInfo& device, std::string_view family) {
  const vk::QuirkFlags q = vk::quirk_flags_for(device);
  DeviceTraits d;
  if (family == "cpu")
    d.family = Family::kCpu;
  else if (family == "gpu")
    d.family = Family::kGpu;
  else
    d.family = q.prefer_cpu_kernels ? Family::kCpu : Family::kGpu;
  d.subgroup = std::max(device.caps.subgroup_size, 1u);
  d.subgroup_arithmetic = device.caps.subgroup_arithmetic;
  d.max_invocations = device.caps.max_workgroup_invocations;
  d.max_groups_x = device.caps.max_workgroup_count[0];
  d.shared_bytes = device.caps.shared_memory_bytes;
  // A margin below the driver's count for the loops an estimate leaves out.
  d.loop_budget = q.max_loop_iterations == 0 ? UINT64_MAX : uint64_t(q.max_loop_iterations) * 7 / 8;
  d.short_dispatches = q.short_dispatches;
  d.max_storage_range = device.caps.max_storage_buffer_range;
  d.max_storage_buffers = device.caps.max_storage_buffers_per_stage;
  d.texel_f32x4 = device.caps.texel_buffer_f32x4;
  d.texel_f16x4 = device.caps.texel_buffer_f16x4;
  d.texel_u32x4 = device.caps.texel_buffer_u32x4;
  d.max_texels = device.caps.max_texel_buffer_elements;
  d.max_texel_bindings = device.caps.max_sampled_images_per_stage;
  d.cooperative_matrix_f16 = device.caps.cooperative_matrix_f16;
  d.unified_memory = device.caps.unified_memory;
  // Without subgroup size control a driver need not say whether it varies the size (Intel's do);
  // CPU drivers run every subgroup at the width they report.
  d.fixed_subgroup = q.cpu_driver || (device.caps.subgroup_size_control &&
                                      device.caps.min_subgroup_size == device.caps.max_subgroup_size);
  return d;
}

namespace {

// The device's traits with its context's family and forced choices (validated at context creation and
// by Context::set_kernel_plan).
DeviceTraits traits_in(const DeviceInfo& device, const rill::detail::ContextImpl& ctx) {
  DeviceTraits d = traits_of(device, ctx.pipelines->preferred_variant());
  if (auto forced = parse_overrides(ctx.kernel_plan); forced.is_ok()) d.forced = forced.value();
  // The forced choices over the tuned ones (both validated at creation).
  if (!ctx.tuned_plan.empty())
    if (auto tuned = parse_overrides(ctx.tuned_plan); tuned.is_ok())
      if (auto both = parse_overrides(ctx.kernel_plan, tuned.value()); both.is_ok()) d.tuned = both.value();
  return d;
}

}  // namespace

DeviceTraits traits_of(const Sequence& seq) { return traits_in(seq.device(), *rill::detail::Access::impl(seq).ctx); }

DeviceTraits traits_of(const Context& ctx) { return traits_in(ctx.device(), rill::detail::Access::impl(ctx)); }

Status check_loop_budget(const DeviceTraits& d, const DeviceInfo& device, uint64_t iterations, const char* op,
                         const char* what) {
  if (iterations <= d.loop_budget) return Status::ok();
  return out_of_range(std::string(op) + ": " + what + " needs about " + std::to_string(iterations) +
                      " loop iterations per invocation; " + device.name + " stops loops after " +
                      std::to_string(vk::quirk_flags_for(device).max_loop_iterations));
}

namespace {

// The generic RMSNorm backward's plan in words: dx's workgroup per row and dgain's row blocks.
std::string generic_backward(const DeviceTraits& d, const RmsnormPlan& r, uint32_t rows, uint32_t dim) {
  std::string text = "a workgroup of " + std::to_string(r.workgroup) + " per row for dx; dgain";
  const auto gain = rmsnorm_backward_gain(d, rows, dim / r.vector_width);
  if (!gain.is_ok()) return text + ": " + gain.status().message();
  return text + " in " + std::to_string(gain->blocks) + " blocks of " + std::to_string(gain->rows_per_block) + " rows" +
         (gain->blocks > 1 ? ", then their ordered sum" : "");
}

}  // namespace

std::vector<PlanSummary> summarize(const DeviceTraits& d) {
  std::vector<PlanSummary> out;
  auto slices = [](uint32_t n) { return n > 1 ? ", summed in " + std::to_string(n) + " slices" : std::string(); };
  auto texels = [](bool on) { return std::string(on ? ", rows read as texels" : ""); };
  for (const auto& [rows, dim] : {std::pair<uint32_t, uint32_t>{4096, 4096}, {16384, 256}, {64, 8192}}) {
    const std::string shape = std::to_string(rows) + " x " + std::to_string(dim);
    const RmsnormPlan r = rmsnorm_forward(d, dim, rows);
    out.push_back(
        {"rmsnorm_forward", shape,
         (r.register_kernel ? "register kernel, " + std::to_string(r.rows_per_group) + " rows per subgroup of " +
                                  std::to_string(r.workgroup) +
                                  (r.subgroups > 1 ? ", " + std::to_string(r.subgroups) + " per workgroup" : "")
                            : "generic kernel, " + std::to_string(r.workgroup) + " invocations per row") +
             texels(r.texel_rows)});
    const auto rb = rmsnorm_backward(d, rows, dim);
    out.push_back({"rmsnorm_backward", shape,
                   rb ? "one pass per block of " + std::to_string(rb->rows_per_block) + " rows (" +
                            std::to_string(rb->blocks) + " blocks of dgain sums" +
                            slices(rmsnorm_gain_sum(d, rb->blocks).slices) + ")" + texels(rb->texel_rows)
                      : generic_backward(d, r, rows, dim) + texels(rmsnorm_texel_rows(d, dim, rows, false, 3))});
  }
  out.push_back({"reduction rows", "any", std::to_string(reduction_workgroup(d)) + " invocations per row"});
  for (const auto& [rows, inner] : {std::pair<uint64_t, uint64_t>{1, 1024}, {1024, 1024}, {256, 4096}}) {
    const MatmulPlan m = matmul(d, {.m = rows, .n = 1024, .k = inner, .rows_vectorizable = true});
    out.push_back({"matmul", std::to_string(rows) + " x 1024 x " + std::to_string(inner),
                   std::string(m.variant()) + " variant, workgroup " + std::to_string(m.wg_x) + " x " +
                       std::to_string(m.wg_y) + ", tile " + std::to_string(m.wg_y * m.tm) + " x " +
                       std::to_string(m.wg_x * m.tn) +
                       (m.register_kernel ? "" : ", slices " + std::to_string(m.depth) + " deep") +
                       (m.stages > 1 ? ", " + std::to_string(m.stages) + " shared stages" : "") +
                       (m.splits > 1 ? ", K in " + std::to_string(m.splits) + " shares" : "") +
                       (m.grouped ? ", grouped accumulators" : "") + (m.texel_rows ? ", rows read as texels" : "")});
  }
  // A language model's projection with int8 weights in groups of 64 rows (ModelOptions::weights).
  const MatmulPlan int8 =
      matmul(d, {.m = 2048, .n = 512, .k = 256, .rows_vectorizable = true, .packed_per_word = 4, .packed_group = 64});
  out.push_back({"matmul, int8 weights", "2048 x 512 x 256, groups of 64",
                 std::string(int8.variant()) + " variant, tile " + std::to_string(int8.wg_y * int8.tm) + " x " +
                     std::to_string(int8.wg_x * int8.tn) +
                     (int8.texel_rows ? ", A, the weights' words and scales read as texels" : "")});
  const MatmulShape f16_square{.m = 4096, .n = 4096, .k = 4096, .f16 = true, .rows_vectorizable = true};
  if (const auto coop = cooperative_matmul(d, f16_square))
    out.push_back({"matmul f16", "4096 x 4096 x 4096",
                   std::string(coop->emulated ? "cooperative matrices emulated" : "cooperative matrices") + ", " +
                       std::to_string(coop->fm) + " x " + std::to_string(coop->fn) + " x " + std::to_string(coop->fk) +
                       " fragments, block " + std::to_string(coop->block_m()) + " x " +
                       std::to_string(coop->block_n()) + ", workgroup " + std::to_string(coop->workgroup()) + ", " +
                       std::to_string(coop->buffers) + (coop->buffers == 1 ? " shared stage" : " shared stages") +
                       " of " + std::to_string(coop->depth) + " k steps"});
  // The bench's shapes: 4 heads of 64 over 16K positions, in blocks of 64 and 256.
  auto rounds = [](bool fused) { return fused ? ", one walk for all rounds of result blocks" : ""; };
  for (const uint32_t block : {64u, 256u}) {
    const BlockAttentionShape bs{.block = block, .dk = 64, .dv = 64, .rows = 4 * 16384, .heads = 4};
    const std::string shape = "block " + std::to_string(block) + ", D 64";
    const BlockAttentionPlan b = block_attention_forward(d, bs);
    out.push_back({"block_attention_forward", shape,
                   b.register_kernel ? "register kernel, " + std::to_string(b.rows_per_lane) +
                                           " query rows per lane, " + std::to_string(b.keys_per_step) +
                                           " keys per step" + (b.texel_rows ? ", rows read as texels" : "")
                   : b.tiled ? "tiled kernel, one workgroup of " + std::to_string(b.workgroup) +
                                   " per block, tiles of " + std::to_string(b.tile) + rounds(b.fused_rounds)
                   : b.flash ? "flash kernel, one workgroup of " + std::to_string(b.workgroup) +
                                   " per 64-row query tile, online softmax over 64-key tiles, tiles of " +
                                   std::to_string(b.tile) + rounds(b.fused_rounds)
                             : "generic kernel, one invocation per query row"});
    const BlockAttentionBackwardPlan bb = block_attention_backward(d, bs);
    out.push_back(
        {"block_attention_backward", shape,
         bb.register_kernel
             ? std::string(bb.dq_from_scores ? "register kernel, key row groups writing dS, then dq = dS K from it, "
                                             : "register kernel, query then key row groups, ") +
                   std::to_string(bb.rows_per_lane) + " rows per lane" +
                   (bb.texel_rows ? ", rows read as texels" : "") + (bb.scores_texels ? ", dS too" : "")
         : bb.tiled ? "tiled kernel, one workgroup of " + std::to_string(bb.workgroup) +
                          " per block for every gradient, tiles of " + std::to_string(bb.tile) + rounds(bb.fused_rounds)
         : bb.flash ? "flash kernels, workgroups of " + std::to_string(bb.workgroup) +
                          " per 64-row query tile (delta, dq), then per key tile (dk, dv), tiles of " +
                          std::to_string(bb.tile) + rounds(bb.fused_rounds)
                    : "generic kernels, one invocation per query row, then per key row"});
  }
  auto describe = [](const Result<LinearAttentionPlan>& la, bool causal) {
    if (!la.is_ok()) return la.status().message();
    std::string text(algorithm_name(la.value().algorithm));
    if (la.value().algorithm != LinearAttentionAlgorithm::kRegisterScan)
      text += ", " + std::to_string(la.value().chunks_per_dispatch) + " chunks per window";
    if (la.value().algorithm == LinearAttentionAlgorithm::kChunkedParallel) {
      text += ", chunks of " + std::to_string(la.value().chunk) + ", tiles of " + std::to_string(la.value().tile);
      if (la.value().output_workgroup != la.value().workgroup)
        text += ", output workgroups of " + std::to_string(la.value().output_workgroup);
      if (la.value().span > 1) text += ", states in spans of " + std::to_string(la.value().span) + " chunks";
      if (la.value().grouped_columns) text += ", output blocks of neighbouring columns";
      if (causal && la.value().fused_scores) text += ", scores fused with the state product";
      if (causal && la.value().paired_rows) text += ", output rows in pairs over the chunk's values resident";
    }
    return text;
  };
  for (const auto& [heads, dim] : {std::pair<uint64_t, uint32_t>{4, 64}, {8, 32}}) {
    const LinearAttentionShape s{.heads = heads, .n = 65536, .dk = dim, .dv = dim, .chunk = 64};
    const std::string shape = "BH " + std::to_string(heads) + ", N 65536, D " + std::to_string(dim);
    out.push_back({"linear_attention_forward (causal)", shape, describe(linear_attention_forward(d, s), true)});
    if (dim == 64) {
      out.push_back(
          {"linear_attention_forward (non-causal)", shape, describe(linear_attention_noncausal(d, s), false)});
      out.push_back({"linear_attention_backward", shape, describe(linear_attention_backward(d, s), true)});
    }
  }
  // Vladymyrov et al.'s FULL model: 3 layers of 242 parameters, about 14,800 loop iterations per layer.
  if (auto icl = icl_layers(
          d, {.width = 11, .tokens = 21, .tasks = 2048, .layers = 3, .layer_params = 242, .layer_iterations = 14800});
      icl.is_ok()) {
    const std::string layers =
        ", " + std::to_string(icl->layers_per_dispatch) + " of 3 layers per dispatch" +
        (icl->query_top_layer ? ", the top layer only what the loss reads" : ", the top layer whole") +
        (icl->texel_reads ? ", the layers' and the gradient reduction's reads as texels" : "");
    out.push_back({"icl layers", "d 10, n 20, L 3 (Vladymyrov et al.)",
                   icl->workgroup_per_task
                       ? "workgroups of " + std::to_string(icl->tasks_per_workgroup) + " x " +
                             std::to_string(icl->workgroup) + " (tasks x invocations)" +
                             (icl->output_block > 1 ? ", outputs in " + std::to_string(icl->output_block) + " x " +
                                                          std::to_string(icl->output_block) + " blocks"
                                                    : "") +
                             layers + " (" + icl->reason + ")"
                       : "a task per invocation" + layers + " (" + icl->reason + ")"});
  }
  LmDecodeShape lm;  // the default model, f32
  lm.dense_f32 = true;
  lm.largest_weight = uint64_t(lm.width) * lm.ffn;
  const auto planned = lm_decode(d, lm);
  const LmDecodePlan decode = planned.is_ok() ? planned.value() : fused_decode_plan(d, lm);
  out.push_back({"lm decode", "width 256, 8 heads, FFN 512, vocab 256",
                 decode.fused ? "fused: 2 dispatches per layer, workgroups of " + std::to_string(decode.workgroup) +
                                    ", FFN slices of " + std::to_string(decode.ffn_slice) + ", " +
                                    std::to_string(decode.logit_columns) + " logits per workgroup, weight loads " +
                                    std::to_string(decode.row_batch) + " rows at a time, " +
                                    std::to_string(std::max(4 * decode.lane_groups, 1u)) + " columns per invocation" +
                                    (decode.texel_weights ? ", f32 weights read as texels" : "") +
                                    (decode.texel_words ? ", int8 words and scales read as texels" : "") +
                                    (decode.x_shuffle ? ", inputs by subgroup shuffles" : "")
                              : "per-op: " + decode.per_op_reason});
  const uint32_t spin = wait_spin_us(d);
  out.push_back({"waits for the device", "",
                 spin == 0 ? "sleep on the fence" : "poll the fence " + std::to_string(spin) + " us, then sleep"});
  return out;
}

}  // namespace rill::ops::plan

namespace rill {

std::vector<KernelPlanLine> describe_kernel_plans(const DeviceInfo& device, std::string_view family) {
  // No forced choices: only a family other than cpu or gpu is refused, which gives no lines.
  auto lines = describe_kernel_plans(device, family, {});
  return lines.is_ok() ? std::move(lines.value()) : std::vector<KernelPlanLine>{};
}

Result<std::vector<KernelPlanLine>> describe_kernel_plans(const DeviceInfo& device, std::string_view family,
                                                          std::string_view kernel_plan) {
  return describe_kernel_plans(device, family, kernel_plan, {});
}

Result<std::vector<KernelPlanLine>> describe_kernel_plans(const DeviceInfo& device, std::string_view family,
                                                          std::string_view kernel_plan, std::string_view tuned_plan) {
  // As a context refuses it: another family would be shown as the device's own plans.
  if (!family.empty() && family != "cpu" && family != "gpu")
    return invalid_argument("kernel family '" + std::string(family) + "': the kernel family is cpu or gpu");
  ops::plan::DeviceTraits traits = ops::plan::traits_of(device, family);
  RILL_ASSIGN_OR_RETURN(traits.forced, ops::plan::parse_overrides(kernel_plan));
  // As a context: the forced choices over the tuned ones.
  if (!tuned_plan.empty()) {
    RILL_ASSIGN_OR_RETURN(const auto tuned, ops::plan::parse_overrides(tuned_plan));
    RILL_ASSIGN_OR_RETURN(traits.tuned, ops::plan::parse_overrides(kernel_plan, tuned));
  }
  std::vector<KernelPlanLine> out;
  out.push_back({"kernel family", "", std::string(ops::plan::family_name(traits.family))});
  for (auto& s : ops::plan::summarize(traits)) out.push_back({std::move(s.op), std::move(s.shape), std::move(s.plan)});
  return out;
}

}  // namespace rill
