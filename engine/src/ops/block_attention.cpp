// Block attention dispatch: shape rules and one workgroup per (block, batch * head).
#include "rill/ops/block_attention.hpp"

#include <algorithm>
#include <cmath>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "ops/whole_op.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::ops {

namespace {
constexpr const char* kBlockAttentionOp = "block_attention";
constexpr uint32_t kMaxDv = 128;
}  // namespace

namespace {

struct Geometry {
  std::string suffix;
  uint64_t bh, n, dk, dv, blocks;
  float scale;
};

// A forced tile depth (RILL_KERNEL_PLAN=block_tile=N) for the tiled GPU kernels that the device's
// shared memory cannot hold: refused, not silently replaced by another kernel.
Status check_forced_tile(const plan::DeviceTraits& d, uint32_t block, bool tiled) {
  if (!d.forced.block_tile || tiled || d.family != plan::Family::kGpu) return Status::ok();
  return invalid_argument("block_attention: the forced tile depth of " + std::to_string(*d.forced.block_tile) +
                          " (block_tile) does not fit the device's shared memory with blocks of " +
                          std::to_string(block));
}

Result<Geometry> check(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                       const Tensor& lse, const BlockAttentionOptions& opt) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kBlockAttentionOp));
  if (q.shape().size() != 4) return invalid_argument("block_attention: q " + q.describe() + " must be [B, H, N, Dk]");
  RILL_RETURN_IF_ERROR(detail::require_same_shape(q, k, kBlockAttentionOp, "k"));
  if (!v.valid() || v.shape().size() != 4 || v.dtype() != q.dtype() ||
      !std::equal(v.shape().begin(), v.shape().begin() + 3, q.shape().begin()))
    return invalid_argument("block_attention: v " + v.describe() + " must be [B, H, N, Dv] like " + q.describe());
  RILL_RETURN_IF_ERROR(detail::require_same_shape(v, o, kBlockAttentionOp, "o"));
  const auto& s = q.shape();
  const uint64_t bh = uint64_t(s[0]) * uint64_t(s[1]), n = uint64_t(s[2]), dk = uint64_t(s[3]),
                 dv = uint64_t(v.shape()[3]);
  RILL_RETURN_IF_ERROR(detail::require_dtype(lse, DType::kF32, kBlockAttentionOp, "lse"));
  RILL_RETURN_IF_ERROR(detail::require_elements(lse, bh * n, kBlockAttentionOp, "lse"));
  if (dv > kMaxDv) return unimplemented("block_attention: Dv of " + std::to_string(dv) + " is above 128");
  const uint32_t max_block =
      std::min(seq.device().caps.max_workgroup_size[0], seq.device().caps.max_workgroup_invocations);
  if (opt.block < 1 || opt.block > max_block)
    return invalid_argument("block_attention: block must be 1.." + std::to_string(max_block) +
                            " (a block is one workgroup)");
  if (!std::isfinite(opt.scale) || opt.scale < 0.0f)
    return invalid_argument("block_attention: scale must be finite and >= 0 (0: 1 / sqrt(Dk)), got " +
                            std::to_string(opt.scale));
  if (bh > 65535) return out_of_range("block_attention: B * H must be <= 65535");
  if (q.element_count() > UINT32_MAX || v.element_count() > UINT32_MAX)
    return out_of_range("block_attention: more than 2^32 elements in q or v");
  const float scale = opt.scale > 0.0f ? opt.scale : 1.0f / std::sqrt(float(dk));
  const uint64_t blocks = (n + opt.block - 1) / opt.block;
  if (blocks > seq.device().caps.max_workgroup_count[0]) return out_of_range("block_attention: too many blocks");
  return Geometry{suffix, bh, n, dk, dv, blocks, scale};
}

using gpu::BlockAttentionPush;

// The 64-row tiles of a block that the flash kernels (blocks past 64) take, one workgroup each.
uint32_t flash_tiles(uint32_t block) { return (block + 63) / 64; }

// The generic and register kernels: an invocation walks its block once, each step over Dk and Dv
// (twice each in the backward). The tiled and flash kernels' walks are a block's tiles.
Status check_row_walk(const Sequence& seq, uint32_t block, uint64_t dk, uint64_t dv) {
  return detail::check_loop_budget(seq, uint64_t(block) * (2 * dk + 2 * dv + 4), kBlockAttentionOp,
                                   "this block size and head dimension");
}

plan::BlockAttentionShape shape_of(const Geometry& g, uint32_t block) {
  return {.block = block,
          .dk = uint32_t(g.dk),
          .dv = uint32_t(g.dv),
          .rows = g.bh * g.n,
          .heads = g.bh,
          .f16 = g.suffix == "f16"};
}

}  // namespace

Status block_attention_forward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                               const Tensor& lse, const BlockAttentionOptions& opt) {
  return detail::whole_op(seq, "block_attention_forward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Geometry g, check(seq, q, k, v, o, lse, opt));
    RILL_RETURN_IF_ERROR(
        detail::require_disjoint({{&o, "o"}, {&lse, "lse"}}, {{&q, "q"}, {&k, "k"}, {&v, "v"}}, kBlockAttentionOp));
    const auto [suffix, bh, n, dk, dv, blocks, scale] = g;
    const BlockAttentionPush push{uint32_t(n), uint32_t(dk), uint32_t(dv), scale};
    // Pairs (t, s) per block: B(B+1)/2 causal, B^2 otherwise; each costs Dk + Dv FMAs (2 FLOPs).
    const uint64_t pairs = opt.causal ? n * (opt.block + 1) / 2 : n * opt.block;
    const uint64_t es = dtype_size(q.dtype());
    const std::string kernel = "block_attention/block_attention_fwd_" + suffix;  // outlives d (a view)
    Dispatch d{.kernel = kernel,
               .bindings = {&q, &k, &v, &o, &lse},
               .push = push_bytes(push),
               .groups = {uint32_t(blocks), uint32_t(bh), 1},
               .spec = {gpu::spec("BLOCK", opt.block), gpu::spec("CAUSAL", opt.causal)},
               .flops = 2 * bh * pairs * (dk + dv),
               .bytes = bh * n * (es * (2 * dk + 2 * dv) + 4)};
    // CPU drivers: the register kernel (head dimensions as specialization constants, keys and values
    // spread over a subgroup's lanes and shuffled), one workgroup = one subgroup per SG rows.
    // A kernel of its own rather than a variant: its specialization constants differ.
    const plan::BlockAttentionPlan p = plan::block_attention_forward(plan::traits_of(seq), shape_of(g, opt.block));
    const std::string cpu_kernel = p.texel_rows ? "block_attention/block_attention_fwd_cpu_tx_" + suffix
                                                : detail::register_kernel("block_attention/block_attention_fwd_cpu",
                                                                          plan::row_vector_width({dk, dv}), suffix);
    const std::string tiled_kernel =
        "block_attention/block_attention_" + std::string(p.flash ? "fwd_flash_" : "fwd_tiled_") + suffix;
    RILL_RETURN_IF_ERROR(check_forced_tile(plan::traits_of(seq), opt.block, p.tiled || p.flash));
    if (!p.tiled && !p.flash) RILL_RETURN_IF_ERROR(check_row_walk(seq, opt.block, dk, dv));
    if (p.tiled || p.flash) {
      d.kernel = tiled_kernel;
      d.spec = {gpu::spec("WG_SIZE", p.workgroup),       gpu::spec("BLOCK", opt.block),
                gpu::spec("CAUSAL", opt.causal),         gpu::spec("TILE", p.tile),
                gpu::spec("DK", uint32_t(dk)),           gpu::spec("DV", uint32_t(dv)),
                gpu::spec("FUSE_ROUNDS", p.fused_rounds)};
      if (p.flash) d.groups[2] = flash_tiles(opt.block);  // a block's 64-row query tiles
    } else if (p.register_kernel) {
      d.kernel = cpu_kernel;
      // A block's row groups side by side in x where the count allows (see the kernel), else in z.
      const uint32_t groups = (opt.block + p.subgroup * p.rows_per_lane - 1) / (p.subgroup * p.rows_per_lane);
      const bool interleave = blocks * groups <= seq.device().caps.max_workgroup_count[0];
      d.groups[interleave ? 0 : 2] *= groups;
      d.spec.push_back(gpu::spec("INTERLEAVE", interleave));
      d.spec.push_back(gpu::spec("TQ", p.rows_per_lane));
      d.spec.push_back(gpu::spec("KC", p.keys_per_step));
      d.spec.push_back(gpu::spec("DK", uint32_t(dk)));
      d.spec.push_back(gpu::spec("DV", uint32_t(dv)));
      d.spec.push_back(gpu::spec("SG", p.subgroup));
    }
    return seq.dispatch(d);
  });
}

Status block_attention_backward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                const Tensor& lse, const Tensor& d_o, const Tensor& dq, const Tensor& dk_out,
                                const Tensor& dv_out, const Tensor& delta, const BlockAttentionOptions& opt) {
  return detail::whole_op(seq, "block_attention_backward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Geometry g, check(seq, q, k, v, o, lse, opt));
    // Named copies, not a structured binding: the dispatch lambdas below capture them (clang before 16
    // refuses to capture a binding).
    const std::string& suffix = g.suffix;
    const uint64_t bh = g.bh, n = g.n, dk = g.dk, dv = g.dv, blocks = g.blocks;
    const float scale = g.scale;
    RILL_RETURN_IF_ERROR(detail::require_same_shape(o, d_o, kBlockAttentionOp, "d_o"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(q, dq, kBlockAttentionOp, "dq"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(q, dk_out, kBlockAttentionOp, "dk"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(v, dv_out, kBlockAttentionOp, "dv"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(lse, delta, kBlockAttentionOp, "delta"));
    RILL_RETURN_IF_ERROR(detail::require_disjoint(
        {{&dq, "dq"}, {&dk_out, "dk"}, {&dv_out, "dv"}, {&delta, "delta"}},
        {{&q, "q"}, {&k, "k"}, {&v, "v"}, {&o, "o"}, {&lse, "lse"}, {&d_o, "d_o"}}, kBlockAttentionOp));
    if (dk > kMaxDv) return unimplemented("block_attention_backward: Dk of " + std::to_string(dk) + " is above 128");
    const BlockAttentionPush push{uint32_t(n), uint32_t(dk), uint32_t(dv), scale};
    const uint64_t pairs = opt.causal ? n * (opt.block + 1) / 2 : n * opt.block;
    const uint64_t es = dtype_size(q.dtype());
    // Every backward kernel's buffers (block_attention_bwd_io.glsl).
    const std::vector<const Tensor*> bindings = {&q, &k, &v, &o, &d_o, &lse, &delta, &dq, &dk_out, &dv_out};
    const plan::BlockAttentionBackwardPlan p =
        plan::block_attention_backward(plan::traits_of(seq), shape_of(g, opt.block));
    RILL_RETURN_IF_ERROR(check_forced_tile(plan::traits_of(seq), opt.block, p.tiled || p.flash || p.register_kernel));
    if (!p.tiled && !p.flash) RILL_RETURN_IF_ERROR(check_row_walk(seq, opt.block, dk, dv));
    if (p.flash) {
      // Query tiles (delta, dq: scores, dP and dQ per pair), then key tiles, which read delta
      // (scores, dV, dP and dK per pair).
      const std::string kernel = "block_attention/block_attention_bwd_flash_" + suffix;  // outlives the dispatches
      for (uint32_t kind : {0u, 1u})
        RILL_RETURN_IF_ERROR(seq.dispatch(
            {.kernel = kernel,
             .bindings = bindings,
             .push = push_bytes(push),
             .groups = {uint32_t(blocks), uint32_t(bh), flash_tiles(opt.block)},
             .spec = {gpu::spec("WG_SIZE", p.workgroup), gpu::spec("BLOCK", opt.block), gpu::spec("CAUSAL", opt.causal),
                      gpu::spec("TILE", p.tile), gpu::spec("DK", uint32_t(dk)), gpu::spec("DV", uint32_t(dv)),
                      gpu::spec("FUSE_ROUNDS", p.fused_rounds), gpu::spec("KIND", kind)},
             .label = kernel + (kind == 0 ? " (delta, dq)" : " (dk, dv)"),
             .flops = 2 * bh * pairs * (kind == 0 ? 2 * dk + dv : 2 * dk + 2 * dv),
             .bytes = bh * n * (kind == 0 ? es * (2 * dk + 2 * dv) + 8 : es * (4 * dk + 3 * dv) + 8)}));
      return Status::ok();
    }
    if (p.tiled) {
      // Scores, dV, dP, dQ and dK: Dk + Dv + Dv + Dk + Dk FMAs per pair.
      const std::string kernel = "block_attention/block_attention_bwd_tiled_" + suffix;  // outlives the dispatch
      return seq.dispatch(
          {.kernel = kernel,
           .bindings = bindings,
           .push = push_bytes(push),
           .groups = {uint32_t(blocks), uint32_t(bh), 1},
           .spec = {gpu::spec("WG_SIZE", p.workgroup), gpu::spec("BLOCK", opt.block), gpu::spec("CAUSAL", opt.causal),
                    gpu::spec("TILE", p.tile), gpu::spec("DK", uint32_t(dk)), gpu::spec("DV", uint32_t(dv)),
                    gpu::spec("FUSE_ROUNDS", p.fused_rounds)},
           .flops = 2 * bh * pairs * (3 * dk + 2 * dv),
           .bytes = bh * n * (es * (4 * dk + 4 * dv) + 8)});
    }
    if (p.register_kernel) {
      const std::string kernel =  // outlives the dispatches
          p.texel_rows ? "block_attention/block_attention_bwd_cpu_tx_" + suffix
                       : detail::register_kernel("block_attention/block_attention_bwd_cpu",
                                                 plan::row_vector_width({dk, dv}), suffix);
      const std::string dq_kernel =
          p.scores_texels ? "block_attention/block_attention_bwd_cpu_tx_dq_" + suffix : kernel;
      const uint32_t groups = (opt.block + p.subgroup * p.rows_per_lane - 1) / (p.subgroup * p.rows_per_lane);
      const uint32_t max_x = seq.device().caps.max_workgroup_count[0];
      // FMAs per pair of each kind: scores and dP (Dk + Dv), then dq (Dk), or dk and dv (Dk + Dv);
      // dq from the scores: Dk. Bytes: the rows each kind reads and writes, and dS in the workspace.
      auto kind_dispatch = [&](uint32_t kind, uint32_t first_block, uint32_t count, bool interleave,
                               const std::vector<const Tensor*>& with) {
        const bool query = kind == gpu::kBlockBackwardDq, product = kind == gpu::kBlockBackwardDqFromScores,
                   scores = product || kind == gpu::kBlockBackwardDkDvScores;
        const uint64_t fmas = product ? dk : query ? 2 * dk + dv : 2 * dk + 2 * dv;
        const uint64_t rows = std::min<uint64_t>(uint64_t(count) * opt.block, n - uint64_t(first_block) * opt.block);
        const uint64_t window_pairs = opt.causal ? rows * (opt.block + 1) / 2 : rows * opt.block;
        const uint64_t row_bytes = product ? 2 * dk : query ? 2 * dk + 2 * dv : 3 * dk + 4 * dv;
        BlockAttentionPush window_push = push;
        window_push.first_block = first_block;
        static constexpr const char* kPass[] = {" (delta, dq)", " (dk, dv)", " (dk, dv, dS)", " (dq = dS K)"};
        const std::string& name = product ? dq_kernel : kernel;
        const std::string label = name + kPass[kind];
        return seq.dispatch(
            {.kernel = name,
             .bindings = with,
             .push = push_bytes(window_push),
             .groups = {uint32_t(interleave ? count * groups : count), uint32_t(bh), interleave ? 1 : groups},
             .spec = {gpu::spec("BLOCK", opt.block), gpu::spec("CAUSAL", opt.causal), gpu::spec("DK", uint32_t(dk)),
                      gpu::spec("DV", uint32_t(dv)), gpu::spec("SG", p.subgroup), gpu::spec("TQ", p.rows_per_lane),
                      gpu::spec("INTERLEAVE", interleave), gpu::spec("KIND", kind)},
             .label = label,
             .flops = 2 * bh * window_pairs * fmas,
             .bytes = bh * rows * (es * row_bytes + 8) + (scores ? 4 * bh * window_pairs : 0)});
      };
      if (p.dq_from_scores) {
        // Windows of blocks whose dS fit the scratch: their key groups, then their dq.
        const uint32_t window = std::min(p.scores_blocks, std::max(max_x / groups, 1u));
        const uint64_t block_scores = bh * uint64_t(p.scores_width) * p.scores_width;
        RILL_ASSIGN_OR_RETURN(
            const Tensor* scores,
            detail::workspace(seq, std::min<uint64_t>(window, blocks) * block_scores, kBlockAttentionOp));
        std::vector<const Tensor*> with = bindings;
        with.push_back(scores);
        for (uint64_t first = 0; first < blocks; first += window) {
          const uint32_t count = uint32_t(std::min<uint64_t>(window, blocks - first));
          for (uint32_t kind : {gpu::kBlockBackwardDkDvScores, gpu::kBlockBackwardDqFromScores})
            RILL_RETURN_IF_ERROR(kind_dispatch(kind, uint32_t(first), count, true, with));
        }
        return Status::ok();
      }
      // Query-row groups and key-row groups, two dispatches that do not depend on each other (the
      // scores binding unread: delta stands in).
      const bool interleave = blocks * groups <= max_x;
      std::vector<const Tensor*> with = bindings;
      with.push_back(&delta);
      for (uint32_t kind : {gpu::kBlockBackwardDq, gpu::kBlockBackwardDkDv})
        RILL_RETURN_IF_ERROR(kind_dispatch(kind, 0, uint32_t(blocks), interleave, with));
      return Status::ok();
    }
    // MODE 0 writes delta and dq; MODE 1 reads delta and writes dk, dv.
    const std::string kernel = "block_attention/block_attention_bwd_" + suffix;  // outlives the dispatches
    for (uint32_t mode : {gpu::kBlockBackwardDq, gpu::kBlockBackwardDkDv})
      RILL_RETURN_IF_ERROR(seq.dispatch(
          {.kernel = kernel,
           .bindings = bindings,
           .push = push_bytes(push),
           .groups = {uint32_t(blocks), uint32_t(bh), 1},
           .spec = {gpu::spec("BLOCK", opt.block), gpu::spec("CAUSAL", opt.causal), gpu::spec("MODE", mode)},
           .flops = 2 * bh * pairs * (mode == gpu::kBlockBackwardDq ? 2 * dk + dv : 2 * dk + 2 * dv),
           .bytes = bh * n * (es * (3 * dk + 3 * dv) + 8)}));
    return Status::ok();
  });
}

}  // namespace rill::ops
