// Dispatch of shaders/lm kernels.
#include "lm/lm_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::lm::detail {
namespace {

// The last three dimensions of a tensor as (batches, rows, cols); leading ones must be 1.
struct Dims3 {
  uint32_t batches = 0, rows = 0, cols = 0;
};

Result<Dims3> dims3(const Tensor& t, const char* op, const char* role) {
  const auto& s = t.shape();
  if (s.size() < 2) return invalid_argument(std::string(op) + ": " + role + " " + t.describe() + " needs two dimensions");
  for (size_t i = 0; i + 3 < s.size(); ++i)
    if (s[i] != 1) return invalid_argument(std::string(op) + ": " + role + " " + t.describe() + " has a leading dimension other than 1");
  if (t.element_count() > UINT32_MAX) return out_of_range(std::string(op) + ": " + role + " has more than 2^32 elements");
  const size_t n = s.size();
  return Dims3{n >= 3 ? uint32_t(s[n - 3]) : 1u, uint32_t(s[n - 2]), uint32_t(s[n - 1])};
}

}  // namespace

Status merge_heads(Sequence& seq, const Tensor& in, const Tensor& out) {
  const char* op = "merge_heads";
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(in, op));
  RILL_ASSIGN_OR_RETURN(Dims3 d, dims3(in, op, "in"));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(out, in.dtype(), op, "out"));
  if (out.shape() != std::vector<int64_t>{int64_t(d.rows), int64_t(d.batches) * d.cols})
    return invalid_argument("merge_heads: out " + out.describe() + " must be [L, H * D] for in " + in.describe());
  const uint64_t n = in.element_count();
  const uint32_t wg = ops::detail::elementwise_workgroup(seq);
  // CPU drivers: 4 elements of a head's row per invocation, read as a texel.
  const bool texels =
      d.cols % 4 == 0 && ops::plan::elementwise_texels(ops::plan::traits_of(seq), n, in.dtype() == DType::kF16, 1);
  return seq.dispatch({.kernel = (texels ? "lm/merge_heads_tx_" : "lm/merge_heads_") + suffix,
                       .bindings = {&in, &out},
                       .push = push_bytes(gpu::HeadsPush{d.batches, d.rows, d.cols}),
                       .groups = ops::detail::groups_for(texels ? n / 4 : n, wg),
                       .spec = {gpu::spec("WG_SIZE", wg)},
                       .bytes = 2 * in.size_bytes()});
}

Status copy_rows(Sequence& seq, const Tensor& src, uint32_t src_first, const Tensor& dst, uint32_t dst_first,
                 uint32_t rows) {
  const char* op = "copy_rows";
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(src, op));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(dst, src.dtype(), op, "dst"));
  RILL_ASSIGN_OR_RETURN(Dims3 s, dims3(src, op, "src"));
  RILL_ASSIGN_OR_RETURN(Dims3 d, dims3(dst, op, "dst"));
  if (s.batches != d.batches || s.cols != d.cols)
    return invalid_argument("copy_rows: " + src.describe() + " and " + dst.describe() + " differ in batches or columns");
  if (uint64_t(src_first) + rows > s.rows || uint64_t(dst_first) + rows > d.rows)
    return out_of_range("copy_rows: rows out of range of " + src.describe() + " or " + dst.describe());
  if (rows == 0) return Status::ok();
  const uint64_t n = uint64_t(s.batches) * rows * s.cols;
  const uint32_t wg = ops::detail::elementwise_workgroup(seq);
  return seq.dispatch(
      {.kernel = "lm/copy_rows_" + suffix,
       .bindings = {&src, &dst},
       .push = push_bytes(gpu::CopyRowsPush{s.batches, rows, s.cols, s.rows, src_first, d.rows, dst_first}),
       .groups = ops::detail::groups_for(n, wg),
       .spec = {gpu::spec("WG_SIZE", wg)},
       .bytes = 2 * n * dtype_size(src.dtype())});
}

Status kv_append(Sequence& seq, const Tensor& k, const Tensor& v, const Tensor& pos, const Tensor& cache_k,
                 const Tensor& cache_v, uint32_t block) {
  const char* op = "kv_append";
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(k, op));
  RILL_ASSIGN_OR_RETURN(Dims3 dk, dims3(k, op, "k"));
  RILL_ASSIGN_OR_RETURN(Dims3 dv, dims3(v, op, "v"));
  RILL_ASSIGN_OR_RETURN(Dims3 ck, dims3(cache_k, op, "cache_k"));
  RILL_ASSIGN_OR_RETURN(Dims3 cv, dims3(cache_v, op, "cache_v"));
  for (const Tensor* t : {&v, &cache_k, &cache_v}) RILL_RETURN_IF_ERROR(ops::detail::require_dtype(*t, k.dtype(), op, "operand"));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(pos, DType::kU32, op, "pos"));
  if ((block > 0 && dk.rows != 1) || dv.rows != dk.rows || dv.batches != dk.batches || ck.batches != dk.batches || cv.batches != dk.batches ||
      ck.cols != dk.cols || cv.cols != dv.cols || ck.rows != cv.rows || (block > 0 && ck.rows != block))
    return invalid_argument("kv_append: shapes do not match: k " + k.describe() + ", v " + v.describe() + ", caches " +
                            cache_k.describe() + ", " + cache_v.describe());
  const uint64_t n = uint64_t(dk.batches) * dk.rows * std::max(dk.cols, dv.cols);
  return seq.dispatch({.kernel = "lm/kv_append_" + suffix,
                       .bindings = {&k, &v, &pos, &cache_k, &cache_v},
                       .push = push_bytes(gpu::KvAppendPush{dk.batches, dk.rows, dk.cols, dv.cols, ck.rows}),
                       .groups = ops::detail::groups_for(n, 64),
                       .spec = {gpu::spec("WG_SIZE", 64), gpu::spec("BLOCK", block)},
                       .bytes = 2 * (k.size_bytes() + v.size_bytes())});
}

Status attend(Sequence& seq, const Tensor& q, const Tensor& cache_k, const Tensor& cache_v, const Tensor& pos,
              const Tensor& o, uint32_t block, uint64_t max_position) {
  const char* op = "attend";
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(q, op));
  RILL_ASSIGN_OR_RETURN(Dims3 dq, dims3(q, op, "q"));
  RILL_ASSIGN_OR_RETURN(Dims3 ck, dims3(cache_k, op, "cache_k"));
  RILL_ASSIGN_OR_RETURN(Dims3 cv, dims3(cache_v, op, "cache_v"));
  RILL_ASSIGN_OR_RETURN(Dims3 d_o, dims3(o, op, "o"));
  for (const Tensor* t : {&cache_k, &cache_v, &o}) RILL_RETURN_IF_ERROR(ops::detail::require_dtype(*t, q.dtype(), op, "operand"));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(pos, DType::kU32, op, "pos"));
  if (ck.batches != dq.batches || cv.batches != dq.batches || d_o.batches != dq.batches || ck.cols != dq.cols ||
      d_o.rows != dq.rows || d_o.cols != cv.cols || ck.rows != cv.rows || (block > 0 && ck.rows != block))
    return invalid_argument("attend: shapes do not match: q " + q.describe() + ", caches " + cache_k.describe() + ", " +
                            cache_v.describe() + ", o " + o.describe());
  if (dq.cols > 128 || cv.cols > 128) return unimplemented("attend: head dimensions above 128");
  if (block == 0 && max_position >= ck.rows)
    return out_of_range("attend: position " + std::to_string(max_position) + " is past the cache capacity " +
                        std::to_string(ck.rows));
  if (max_position > UINT32_MAX) return out_of_range("attend: positions past 2^32");
  // Keys per workgroup: a block fits one subgroup; the full cache gets up to 32 subgroups.
  const uint32_t sg = std::max(seq.device().caps.subgroup_size, 4u);
  const uint64_t keys = block > 0 ? block : max_position + 1;
  const uint32_t wg = uint32_t(std::clamp<uint64_t>((keys + sg - 1) / sg * sg, sg, std::min<uint32_t>(128, 32 * sg)));
  RILL_RETURN_IF_ERROR(ops::detail::check_loop_budget(seq, (keys + wg - 1) / wg + 64, op, "the number of cached keys"));
  const float scale = float(1.0 / std::sqrt(double(dq.cols)));
  // The subgroup form keeps partial rows for up to 32 subgroups (4 (2 + Dv) 32 bytes, 16.6 KiB at
  // Dv 128): past a phone's 16 KiB the shared-memory form (8 KiB) takes it.
  // It keeps them by gl_SubgroupID, so subgroups of 4 or more (whatever size a driver that varies it
  // runs: at least its minimum) keep a workgroup of 128 within 32 of them.
  std::string variant = ops::detail::reduction_variant(seq);
  if (variant.empty() &&
      (4ull * 32 * (cv.cols + 2) > seq.device().caps.shared_memory_bytes || seq.device().caps.min_subgroup_size < 4))
    variant = "_nosubgroup";
  return seq.dispatch({.kernel = "lm/attend" + variant + "_" + suffix,
                       .bindings = {&q, &cache_k, &cache_v, &pos, &o},
                       .push = push_bytes(gpu::AttendPush{dq.rows, ck.rows, scale}),
                       .groups = {dq.rows, dq.batches, 1},
                       .spec = {gpu::spec("WG_SIZE", wg), gpu::spec("BLOCK", block), gpu::spec("DK", dq.cols),
                                gpu::spec("DV", cv.cols)},
                       .flops = 2 * keys * (dq.cols + cv.cols) * dq.rows * dq.batches,
                       .bytes = keys * (dq.cols + cv.cols) * dtype_size(q.dtype()) * dq.batches});
}

Status lrpe(Sequence& seq, const Tensor& x, const Tensor& base, const Tensor& coarse, const Tensor& fine,
            const Tensor& y, ops::FeatureMap feature_map) {
  const char* op = "lrpe";
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(x, op));
  RILL_ASSIGN_OR_RETURN(Dims3 d, dims3(x, op, "x"));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(y, x.dtype(), op, "y"));
  RILL_RETURN_IF_ERROR(ops::detail::require_elements(y, 2 * x.element_count(), op, "y"));
  const uint64_t channels = uint64_t(d.batches) * d.cols, coarse_rows = (uint64_t(d.rows) + 63) / 64;
  for (const Tensor* t : {&base, &coarse, &fine}) RILL_RETURN_IF_ERROR(ops::detail::require_dtype(*t, DType::kF32, op, "table"));
  RILL_RETURN_IF_ERROR(ops::detail::require_elements(base, channels * 2, op, "base"));
  RILL_RETURN_IF_ERROR(ops::detail::require_elements(fine, 64 * channels * 2, op, "fine"));
  if (coarse.element_count() < coarse_rows * channels * 2)
    return invalid_argument("lrpe: coarse " + coarse.describe() + " holds fewer than " + std::to_string(coarse_rows) +
                            " rows of " + std::to_string(channels) + " rotations");
  const uint64_t n = x.element_count();
  const uint32_t wg = ops::detail::elementwise_workgroup(seq);
  return seq.dispatch({.kernel = "lm/lrpe_" + suffix,
                       .bindings = {&x, &base, &coarse, &fine, &y},
                       .push = push_bytes(gpu::HeadsPush{d.batches, d.rows, d.cols}),
                       .groups = ops::detail::groups_for(n, wg),
                       .spec = {gpu::spec("WG_SIZE", wg), gpu::spec("FEATURE", uint32_t(feature_map))},
                       .bytes = 3 * x.size_bytes() + 24 * n});
}

Status token_log_probs(Sequence& seq, const Tensor& logits, const Tensor& targets, const Tensor& running,
                       const Tensor& log_probs, const LogProbBlock& block) {
  const char* op = "token_log_probs";
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(logits, op));
  RILL_ASSIGN_OR_RETURN(Dims3 d, dims3(logits, op, "logits"));
  if (d.batches != 1)
    return invalid_argument("token_log_probs: logits " + logits.describe() + " must be [rows, count]");
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(targets, DType::kU32, op, "targets"));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(running, DType::kF32, op, "running"));
  RILL_RETURN_IF_ERROR(ops::detail::require_dtype(log_probs, DType::kF32, op, "log_probs"));
  const uint64_t last_row = uint64_t(block.row_offset) + d.rows;
  if (targets.element_count() < last_row || log_probs.element_count() < last_row ||
      running.element_count() < last_row * gpu::kLogProbRunningWords)
    return invalid_argument("token_log_probs: rows [" + std::to_string(block.row_offset) + ", " +
                            std::to_string(last_row) + ") are not all in targets " + targets.describe() + ", running " +
                            running.describe() + " and log_probs " + log_probs.describe());
  if (uint64_t(block.first) + d.cols > block.vocab)
    return invalid_argument("token_log_probs: block [" + std::to_string(block.first) + ", +" + std::to_string(d.cols) +
                            ") is past the vocabulary of " + std::to_string(block.vocab));
  // Two passes over each invocation's share of the row.
  const uint32_t wg = ops::detail::reduction_workgroup(seq, d.cols);
  RILL_RETURN_IF_ERROR(
      ops::detail::check_loop_budget(seq, 2ull * ((d.cols + wg - 1) / wg), op, "a row of this length"));
  const uint32_t flags =
      (block.first_block ? gpu::kLogProbFirstBlock : 0u) | (block.last_block ? gpu::kLogProbLastBlock : 0u);
  const uint64_t n = uint64_t(d.rows) * d.cols;
  return seq.dispatch(
      {.kernel = "lm/token_log_probs" + std::string(ops::detail::reduction_variant(seq)) + "_" + suffix,
       .bindings = {&logits, &targets, &running, &log_probs},
       .push = push_bytes(gpu::TokenLogProbPush{d.rows, block.row_offset, d.cols, block.first, block.vocab, flags}),
       .groups = ops::detail::grid_for(d.rows),
       .spec = {gpu::spec("WG_SIZE", wg)},
       .flops = 3 * n,
       .bytes = 2 * logits.size_bytes()});
}

std::vector<float> lrpe_rotations(std::span<const float> theta, uint64_t first, uint64_t step, uint32_t rows) {
  std::vector<float> out(size_t(rows) * theta.size() * 2);
  for (uint32_t r = 0; r < rows; ++r) {
    const double position = double(first + uint64_t(r) * step);
    for (size_t c = 0; c < theta.size(); ++c) {
      const double angle = double(theta[c]) * position;
      out[(size_t(r) * theta.size() + c) * 2] = float(std::cos(angle));
      out[(size_t(r) * theta.size() + c) * 2 + 1] = float(std::sin(angle));
    }
  }
  return out;
}

}  // namespace rill::lm::detail
