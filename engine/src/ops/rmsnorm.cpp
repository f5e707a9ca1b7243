// RMSNorm dispatch: validates shapes and dtypes, picks the kernel for the storage type and the
// workgroup width for the device, and declares each dispatch's FLOPs and bytes for profiles.
#include "rill/ops/rmsnorm.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "ops/whole_op.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::ops {
namespace {

constexpr const char* kRmsnormOp = "rmsnorm";

Status check_gain(const Tensor* gain, const Tensor& x, uint32_t dim) {
  if (!gain) return Status::ok();
  RILL_RETURN_IF_ERROR(detail::require_dtype(*gain, x.dtype(), kRmsnormOp, "gain"));
  return detail::require_elements(*gain, dim, kRmsnormOp, "gain");
}

Status check_common(Sequence& seq, const Tensor& x, const Tensor& rstd, detail::RowsDim rd) {
  RILL_RETURN_IF_ERROR(detail::require_dtype(rstd, DType::kF32, kRmsnormOp, "rstd"));
  (void)x;
  RILL_RETURN_IF_ERROR(
      detail::check_loop_budget(seq, 3ull * ((rd.dim + 255) / 256), kRmsnormOp, "a row of this length"));
  return detail::require_elements(rstd, rd.rows, kRmsnormOp, "rstd");
}

// A kernel's variant: rows read as texels (`_tx`, 4 elements per fetch), or its storage-buffer
// form with the plan's vector width.
std::string row_kernel(const std::string& stem, bool texel_rows, uint32_t vector_width, const std::string& suffix) {
  return texel_rows ? stem + "_tx_" + suffix : detail::register_kernel(stem, vector_width, suffix);
}

// The forward dispatch of either kernel. row_tensors: rows read and written (x, y; with the residual
// also residual and h). The bytes declared are those, the gain once and rstd: the roofline's floor
// of memory traffic (the generic kernel reads its inputs' rows twice, the second time mostly from
// cache, and workgroups share the gain through the cache; counting those put the generic kernel
// over 100 % of copy bandwidth).
Status forward_dispatch(Sequence& seq, const std::string& name, const std::string& suffix, detail::RowsDim rd,
                        std::vector<const Tensor*> bindings, bool has_gain, float eps, uint32_t row_tensors,
                        uint32_t flops_per_element, uint32_t es) {
  const uint64_t n = uint64_t(rd.rows) * rd.dim;
  const uint64_t bytes = row_tensors * n * es + (has_gain ? uint64_t(rd.dim) * es : 0) + 4ull * rd.rows;
  const plan::RmsnormPlan p = plan::rmsnorm_forward(plan::traits_of(seq), rd.dim, rd.rows, es == 2, row_tensors == 4);
  if (p.register_kernel) {
    // rmsnorm_fwd_register.glsl: each subgroup keeps its share of rows_per_group rows in registers.
    const uint32_t sg = p.workgroup, groups = (rd.rows + p.rows_per_group - 1) / p.rows_per_group;
    const std::string kernel = row_kernel("rmsnorm/" + name + "_register", p.texel_rows, p.vector_width, suffix);
    return seq.dispatch({.kernel = kernel,
                         .bindings = std::move(bindings),
                         .push = push_bytes(gpu::RmsnormForwardPush{rd.rows, rd.dim, eps}),
                         .groups = detail::grid_for((groups + p.subgroups - 1) / p.subgroups),
                         .spec = {gpu::spec("SG", sg), gpu::spec("HAS_GAIN", has_gain),
                                  gpu::spec("R", (rd.dim + sg * p.vector_width - 1) / (sg * p.vector_width)),
                                  gpu::spec("ROWS", p.rows_per_group), gpu::spec("WG_SIZE", sg * p.subgroups)},
                         .flops = flops_per_element * n,
                         .bytes = bytes});
  }
  const std::string kernel =
      row_kernel("rmsnorm/" + name + detail::reduction_variant(seq), p.texel_rows, p.vector_width, suffix);
  return seq.dispatch({.kernel = kernel,
                       .bindings = std::move(bindings),
                       .push = push_bytes(gpu::RmsnormForwardPush{rd.rows, rd.dim, eps}),
                       .groups = detail::grid_for(rd.rows),
                       .spec = {gpu::spec("WG_SIZE", p.workgroup), gpu::spec("HAS_GAIN", has_gain)},
                       .flops = flops_per_element * n,
                       .bytes = bytes});
}

// dgain[c] = the sum over blocks, in a fixed order, of partial[block, c] (rmsnorm_bwd_gain_sum).
Status sum_gain_blocks(Sequence& seq, const Tensor& partial, const Tensor& dgain, uint32_t blocks, uint32_t dim) {
  const plan::RmsnormGainSumPlan p = plan::rmsnorm_gain_sum(plan::traits_of(seq), blocks);
  return seq.dispatch({.kernel = "rmsnorm/rmsnorm_bwd_gain_sum",
                       .bindings = {&partial, &dgain},
                       .push = push_bytes(gpu::RmsnormGainSumPush{blocks, dim}),
                       .groups = detail::groups_for(dim, p.workgroup / p.slices),
                       .spec = {gpu::spec("WG_SIZE", p.workgroup), gpu::spec("SLICES", p.slices)},
                       .flops = uint64_t(blocks) * dim,
                       .bytes = 4ull * (blocks + 1) * dim});
}

}  // namespace

Status rmsnorm_forward(Sequence& seq, const Tensor& x, const Tensor* gain, const Tensor& y, const Tensor& rstd,
                       float eps) {
  return detail::whole_op(seq, "rmsnorm_forward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(x, kRmsnormOp));
    RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(x, kRmsnormOp));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(x, y, kRmsnormOp, "y"));
    RILL_RETURN_IF_ERROR(check_gain(gain, x, rd.dim));
    RILL_RETURN_IF_ERROR(check_common(seq, x, rstd, rd));
    if (!(std::isfinite(eps) && eps > 0.0f))  // 0 made an all-zero row 0 * inf = NaN; inf, every y 0
      return invalid_argument("rmsnorm: eps must be finite and > 0");
    return forward_dispatch(seq, "rmsnorm_fwd", suffix, rd, {&x, gain ? gain : &x, &y, &rstd}, gain != nullptr, eps, 2,
                            4, dtype_size(x.dtype()));
  });
}

Status rmsnorm_residual_forward(Sequence& seq, const Tensor& x, const Tensor& residual, const Tensor* gain,
                                const Tensor& h, const Tensor& y, const Tensor& rstd, float eps) {
  return detail::whole_op(seq, "rmsnorm_residual_forward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(x, kRmsnormOp));
    RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(x, kRmsnormOp));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(x, residual, kRmsnormOp, "residual"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(x, h, kRmsnormOp, "h"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(x, y, kRmsnormOp, "y"));
    RILL_RETURN_IF_ERROR(check_gain(gain, x, rd.dim));
    RILL_RETURN_IF_ERROR(check_common(seq, x, rstd, rd));
    if (!(std::isfinite(eps) && eps > 0.0f))  // 0 made an all-zero row 0 * inf = NaN; inf, every y 0
      return invalid_argument("rmsnorm: eps must be finite and > 0");
    // Both outputs written in turn: one tensor for the two would keep only y (y over x stays legal).
    RILL_RETURN_IF_ERROR(detail::require_disjoint({{&h, "h"}, {&y, "y"}, {&rstd, "rstd"}}, {}, kRmsnormOp));
    return forward_dispatch(seq, "rmsnorm_residual_fwd", suffix, rd, {&x, &residual, gain ? gain : &x, &h, &y, &rstd},
                            gain != nullptr, eps, 4, 5, dtype_size(x.dtype()));
  });
}

Status rmsnorm_backward(Sequence& seq, const Tensor& x, const Tensor* gain, const Tensor& rstd, const Tensor& dy,
                        const Tensor& dx, const Tensor* dgain, bool accumulate) {
  return detail::whole_op(seq, "rmsnorm_backward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(x, kRmsnormOp));
    RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(x, kRmsnormOp));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(x, dy, kRmsnormOp, "dy"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(x, dx, kRmsnormOp, "dx"));
    RILL_RETURN_IF_ERROR(check_gain(gain, x, rd.dim));
    RILL_RETURN_IF_ERROR(check_common(seq, x, rstd, rd));
    if (dgain && !gain) return invalid_argument("rmsnorm_backward: dgain needs a gain");
    if (dgain) {
      RILL_RETURN_IF_ERROR(detail::require_dtype(*dgain, DType::kF32, kRmsnormOp, "dgain"));
      RILL_RETURN_IF_ERROR(detail::require_elements(*dgain, rd.dim, kRmsnormOp, "dgain"));
    }
    const uint64_t n = uint64_t(rd.rows) * rd.dim, es = dtype_size(x.dtype());
    const plan::DeviceTraits traits = plan::traits_of(seq);
    if (const auto reg = plan::rmsnorm_backward(traits, rd.rows, rd.dim, es == 2)) {
      // rmsnorm_bwd_register: dx and each block's dgain sums in one pass, then the blocks' ordered sum.
      const Tensor* partial = dgain ? dgain : &dx;  // unused without dgain (DGAIN false)
      if (dgain && reg->blocks > 1) {
        RILL_ASSIGN_OR_RETURN(partial, detail::workspace(seq, uint64_t(reg->blocks) * rd.dim, kRmsnormOp));
      }
      RILL_RETURN_IF_ERROR(seq.dispatch(
          {.kernel = row_kernel("rmsnorm/rmsnorm_bwd_register", reg->texel_rows, reg->vector_width, suffix),
           .bindings = {&x, gain ? gain : &x, &rstd, &dy, &dx, partial},
           .push = push_bytes(gpu::RmsnormGainPush{rd.rows, rd.dim, reg->rows_per_block}),
           .groups = detail::grid_for(reg->blocks),
           .spec = {gpu::spec("SG", reg->subgroup), gpu::spec("HAS_GAIN", gain != nullptr),
                    gpu::spec("ACCUMULATE", accumulate), gpu::spec("DGAIN", dgain != nullptr),
                    gpu::spec("R",
                              (rd.dim + reg->subgroup * reg->vector_width - 1) / (reg->subgroup * reg->vector_width)),
                    gpu::spec("WG_SIZE", reg->subgroup * reg->subgroups)},
           .flops = (dgain ? 10 : 7) * n,
           .bytes = (accumulate ? 4 : 3) * n * es + 4ull * rd.rows + (dgain ? 4ull * reg->blocks * rd.dim : 0) +
                    uint64_t(reg->blocks) * rd.dim * es}));
      if (!dgain || reg->blocks == 1) return Status::ok();
      return sum_gain_blocks(seq, *partial, *dgain, reg->blocks, rd.dim);
    }
    // The generic kernels take the forward's workgroup and loads (the same walk over each row, twice).
    const plan::RmsnormPlan row_plan = plan::rmsnorm_forward(traits, rd.dim, rd.rows);
    const uint32_t wg = row_plan.workgroup, vector_width = row_plan.vector_width;
    const bool texel_rows = plan::rmsnorm_texel_rows(traits, rd.dim, rd.rows, es == 2, 3);
    // dgain first: it reads x and dy, which dx may be (in place). Partial column sums over blocks of
    // rows, then (with more than one block) their sum.
    if (dgain) {
      // 64 columns (of vector_width elements) per workgroup, along x.
      const uint64_t column_groups = (uint64_t(rd.dim / vector_width) + 63) / 64;
      if (column_groups > seq.device().caps.max_workgroup_count[0])
        return out_of_range("rmsnorm_backward: dgain over " + std::to_string(rd.dim) + " columns takes " +
                            std::to_string(column_groups) + " workgroups, past the device's " +
                            std::to_string(seq.device().caps.max_workgroup_count[0]) + " in x");
      RILL_ASSIGN_OR_RETURN(const plan::RmsnormGainPlan gain_plan,
                            plan::rmsnorm_backward_gain(traits, rd.rows, rd.dim / vector_width));
      const uint32_t blocks = gain_plan.blocks;
      const Tensor* partial = dgain;
      if (blocks > 1) {
        RILL_ASSIGN_OR_RETURN(partial, detail::workspace(seq, uint64_t(blocks) * rd.dim, kRmsnormOp));
      }
      RILL_RETURN_IF_ERROR(
          seq.dispatch({.kernel = row_kernel("rmsnorm/rmsnorm_bwd_gain", texel_rows, vector_width, suffix),
                        .bindings = {&x, &rstd, &dy, partial},
                        .push = push_bytes(gpu::RmsnormGainPush{rd.rows, rd.dim, gain_plan.rows_per_block}),
                        .groups = {uint32_t(column_groups), blocks, 1},
                        .flops = 3 * n,
                        .bytes = 2 * n * es + 4ull * rd.rows + 4ull * blocks * rd.dim}));
      if (blocks > 1) RILL_RETURN_IF_ERROR(sum_gain_blocks(seq, *partial, *dgain, blocks, rd.dim));
    }
    return seq.dispatch({.kernel = row_kernel("rmsnorm/rmsnorm_bwd" + std::string(detail::reduction_variant(seq)),
                                              texel_rows, vector_width, suffix),
                         .bindings = {&x, gain ? gain : &x, &rstd, &dy, &dx},
                         .push = push_bytes(gpu::RmsnormBackwardPush{rd.rows, rd.dim}),
                         .groups = detail::grid_for(rd.rows),
                         .spec = {gpu::spec("WG_SIZE", wg), gpu::spec("HAS_GAIN", gain != nullptr),
                                  gpu::spec("ACCUMULATE", accumulate)},
                         .flops = 7 * n,
                         .bytes = (accumulate ? 4 : 3) * n * es + 4ull * rd.rows});
  });
}

}  // namespace rill::ops
