// Dispatch of the elementwise ops: shape and dtype checks, then one invocation per element
// (softmax: one workgroup per row).
#include "rill/ops/elementwise.hpp"

#include <cmath>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "ops/whole_op.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::ops {

static_assert(uint32_t(GluActivation::kIdentity) == gpu::kActIdentity &&
              uint32_t(GluActivation::kSigmoid) == gpu::kActSigmoid && uint32_t(GluActivation::kSilu) == gpu::kActSilu);

namespace {

Result<uint32_t> count_of(const Tensor& t, const char* op) {
  if (!t.valid()) return invalid_argument(std::string(op) + ": a tensor is empty");
  if (t.element_count() > UINT32_MAX) return out_of_range(std::string(op) + ": more than 2^32 elements");
  return uint32_t(t.element_count());
}

// `inputs`: how many of `same`, first, the kernel reads (the rest it writes).
Status elementwise(Sequence& seq, const char* op, const std::string& kernel, std::vector<const Tensor*> same,
                   uint32_t inputs, std::vector<SpecValue> spec, uint64_t flops_per_element) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(*same[0], op));
  for (size_t i = 1; i < same.size(); ++i)
    RILL_RETURN_IF_ERROR(detail::require_same_shape(*same[0], *same[i], op, "operand"));
  RILL_ASSIGN_OR_RETURN(uint32_t n, count_of(*same[0], op));
  const uint32_t wg = detail::elementwise_workgroup(seq);
  spec.insert(spec.begin(), gpu::spec("WG_SIZE", wg));
  // CPU drivers: 4 elements per invocation, the inputs read as texels (elementwise_texels.glsl).
  const bool texels = plan::elementwise_texels(plan::traits_of(seq), n, same[0]->dtype() == DType::kF16, inputs);
  return seq.dispatch({.kernel = kernel + (texels ? "_tx_" : "_") + suffix,
                       .bindings = std::vector<const Tensor*>(same.begin(), same.end()),
                       .push = push_bytes(gpu::CountPush{n}),
                       .groups = detail::groups_for(texels ? n / 4 : n, wg),
                       .spec = std::move(spec),
                       .flops = flops_per_element * n,
                       .bytes = uint64_t(n) * dtype_size(same[0]->dtype()) * same.size()});
}

}  // namespace

Status add(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& out) {
  return detail::whole_op(seq, "add", [&]() -> Status {
    return elementwise(seq, "add", "elementwise/binary", {&a, &b, &out}, 2, {gpu::spec("OP", gpu::kBinaryAdd)}, 1);
  });
}
Status mul(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& out) {
  return detail::whole_op(seq, "mul", [&]() -> Status {
    return elementwise(seq, "mul", "elementwise/binary", {&a, &b, &out}, 2, {gpu::spec("OP", gpu::kBinaryMul)}, 1);
  });
}
Status convert(Sequence& seq, const Tensor& src, const Tensor& dst) {
  return detail::whole_op(seq, "convert", [&]() -> Status {
    const char* op = "convert";
    RILL_ASSIGN_OR_RETURN(const std::string from, detail::float_suffix(src, op));
    RILL_ASSIGN_OR_RETURN(const std::string to, detail::float_suffix(dst, op));
    if (src.shape() != dst.shape())
      return invalid_argument("convert: dst " + dst.describe() + " must have the shape of src " + src.describe());
    if (src.dtype() == dst.dtype()) return seq.copy(src, dst);
    RILL_ASSIGN_OR_RETURN(const uint32_t n, count_of(src, op));
    const uint32_t wg = detail::elementwise_workgroup(seq);
    const bool texels = plan::elementwise_texels(plan::traits_of(seq), n, src.dtype() == DType::kF16, 1);
    return seq.dispatch({.kernel = std::string("elementwise/convert_") + (texels ? "tx_" : "") + from + "_to_" + to,
                         .bindings = {&src, &dst},
                         .push = push_bytes(gpu::CountPush{n}),
                         .groups = detail::groups_for(texels ? n / 4 : n, wg),
                         .spec = {gpu::spec("WG_SIZE", wg)},
                         .bytes = src.size_bytes() + dst.size_bytes()});
  });
}

Status silu_forward(Sequence& seq, const Tensor& x, const Tensor& y) {
  return detail::whole_op(seq, "silu_forward", [&]() -> Status {
    // The dy binding is unused forward: x stands in.
    return elementwise(seq, "silu", "elementwise/silu", {&x, &x, &y}, 2, {gpu::spec("BACKWARD", 0)}, 4);
  });
}
Status silu_backward(Sequence& seq, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  return detail::whole_op(seq, "silu_backward", [&]() -> Status {
    return elementwise(seq, "silu", "elementwise/silu", {&x, &dy, &dx}, 2, {gpu::spec("BACKWARD", 1)}, 8);
  });
}
Status glu_forward(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& out, GluActivation act) {
  return detail::whole_op(seq, "glu_forward", [&]() -> Status {
    return elementwise(seq, "glu", "elementwise/glu", {&a, &b, &out}, 2, {gpu::spec("ACT", uint32_t(act))}, 5);
  });
}
Status glu_backward(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& dy, const Tensor& da,
                    const Tensor& db, GluActivation act) {
  return detail::whole_op(seq, "glu_backward", [&]() -> Status {
    return elementwise(seq, "glu", "elementwise/glu_bwd", {&a, &b, &dy, &da, &db}, 3, {gpu::spec("ACT", uint32_t(act))},
                       10);
  });
}

namespace {

// A block's expected share of the rows a gather moves (each block moves only its ids' rows), so that
// a split table's dispatches add up to the whole gather's traffic in profiles.
uint64_t block_share(uint64_t bytes, uint64_t block_rows, uint64_t vocab) {
  return vocab == 0 ? bytes : uint64_t(double(bytes) * double(block_rows) / double(vocab));
}

// The checks both embedding gathers share; zeroes the error count.
Status check_gather(const Tensor& out, const Tensor& errors, uint64_t tokens, uint64_t vocab, uint64_t dim,
                    float scale) {
  const char* op = "embedding";
  RILL_RETURN_IF_ERROR(detail::require_elements(out, tokens * dim, op, "out"));
  RILL_RETURN_IF_ERROR(detail::require_dtype(errors, DType::kU32, op, "errors"));
  RILL_RETURN_IF_ERROR(detail::require_elements(errors, 1, op, "errors"));
  if (tokens * dim > UINT32_MAX || vocab > UINT32_MAX) return out_of_range("embedding: more than 2^32 elements");
  if (!std::isfinite(scale)) return invalid_argument("embedding: scale must be finite");
  return Status::ok();
}

}  // namespace

Status embedding_forward(Sequence& seq, const Tensor& ids, const Tensor& table, const Tensor& out, const Tensor& errors,
                         float scale) {
  return detail::whole_op(seq, "embedding_forward", [&]() -> Status {
    const char* op = "embedding";
    RILL_RETURN_IF_ERROR(detail::require_dtype(ids, DType::kU32, op, "ids"));
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(table, op));
    if (table.shape().size() != 2)
      return invalid_argument("embedding: table " + table.describe() + " must be [vocab, dim]");
    const uint64_t vocab = uint64_t(table.shape()[0]), dim = uint64_t(table.shape()[1]), tokens = ids.element_count();
    RILL_RETURN_IF_ERROR(detail::require_dtype(out, table.dtype(), op, "out"));
    RILL_RETURN_IF_ERROR(check_gather(out, errors, tokens, vocab, dim, scale));
    // A table larger than one binding (a big vocabulary in f32): a dispatch per block of its rows.
    RILL_ASSIGN_OR_RETURN(std::vector<detail::RowBlock> blocks,
                          detail::binding_row_blocks(table, seq.device().caps.max_storage_buffer_range, op));
    // Recorded once every check passed: a refused call records nothing.
    RILL_RETURN_IF_ERROR(seq.fill_zero(errors));
    const uint32_t wg = detail::elementwise_workgroup(seq);
    for (const detail::RowBlock& b : blocks) {
      Tensor part;
      if (blocks.size() > 1) {
        RILL_ASSIGN_OR_RETURN(part, table.rows(b.first, b.count));
      }
      RILL_RETURN_IF_ERROR(seq.dispatch(
          {.kernel = "embedding/embedding_fwd_" + suffix,
           .bindings = {&ids, blocks.size() > 1 ? &part : &table, &out, &errors},
           .push = push_bytes(gpu::EmbeddingPush{.tokens = uint32_t(tokens),
                                                 .vocab = uint32_t(vocab),
                                                 .dim = uint32_t(dim),
                                                 .scale = scale,
                                                 .words_per_row = 0,
                                                 .group = 1,
                                                 .first = uint32_t(b.first),
                                                 .rows = uint32_t(b.count)}),
           .groups = detail::groups_for(tokens * dim, wg),
           .spec = {gpu::spec("WG_SIZE", wg)},
           .bytes = tokens * 4 + block_share(2 * tokens * dim * dtype_size(table.dtype()), b.count, vocab)}));
    }
    return Status::ok();
  });
}

namespace {

// The gather from packed column blocks (one block: a whole table), a dispatch per block.
Status embedding_forward_packed(Sequence& seq, const Tensor& ids, std::span<const PackedWeights> blocks,
                                std::span<const int64_t> first, int64_t dim, int64_t vocab, const Tensor& out,
                                const Tensor& errors, float scale) {
  const char* op = "embedding";
  RILL_RETURN_IF_ERROR(detail::require_dtype(ids, DType::kU32, op, "ids"));
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(out, op));
  if (blocks.empty() || blocks.size() != first.size())
    return invalid_argument("embedding: the packed table has no blocks, or not one start per block");
  int64_t next = 0;  // the blocks must tile the vocabulary in order
  for (size_t b = 0; b < blocks.size(); ++b) {
    const PackedWeights& t = blocks[b];
    if (t.batch != 1) return invalid_argument("embedding: the packed table must be one [dim, vocab] matrix");
    RILL_RETURN_IF_ERROR(t.check(op));
    if (t.rows != dim || first[b] != next || t.format != blocks[0].format)
      return invalid_argument("embedding: packed block " + std::to_string(b) + " " + t.describe() + " at column " +
                              std::to_string(first[b]) + " does not continue a [" + std::to_string(dim) + ", " +
                              std::to_string(vocab) + "] table");
    next += t.cols;
  }
  if (next != vocab)
    return invalid_argument("embedding: the packed blocks hold " + std::to_string(next) + " of " +
                            std::to_string(vocab) + " columns");
  const uint64_t tokens = ids.element_count();
  RILL_RETURN_IF_ERROR(check_gather(out, errors, tokens, uint64_t(vocab), uint64_t(dim), scale));
  RILL_RETURN_IF_ERROR(seq.fill_zero(errors));
  const uint32_t wg = detail::elementwise_workgroup(seq);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const PackedWeights& t = blocks[b];
    const bool scaled = has_scales(t.format);
    const gpu::EmbeddingPush push{.tokens = uint32_t(tokens),
                                  .vocab = uint32_t(vocab),
                                  .dim = uint32_t(dim),
                                  .scale = scale,
                                  .words_per_row = uint32_t(t.words.shape()[2]),
                                  .group = scaled ? t.group : 1u,
                                  .first = uint32_t(first[b]),
                                  .rows = uint32_t(t.cols)};
    RILL_RETURN_IF_ERROR(seq.dispatch(
        {.kernel = std::string("embedding/embedding_fwd_") + detail::packed_kernel_form(t.format) + "_" + suffix,
         .bindings = {&ids, &t.words, &out, &errors, scaled ? &t.scales : &t.words},
         .push = push_bytes(push),
         .groups = detail::groups_for(tokens * uint64_t(dim), wg),
         .spec = {gpu::spec("WG_SIZE", wg)},
         .bytes = tokens * 4 +
                  block_share(tokens * uint64_t(dim) * (dtype_size(out.dtype()) + (scaled ? 5 : 2)), t.cols, vocab)}));
  }
  return Status::ok();
}

}  // namespace

Status embedding_forward(Sequence& seq, const Tensor& ids, const PackedWeights& table_t, const Tensor& out,
                         const Tensor& errors, float scale) {
  return detail::whole_op(seq, "embedding_forward", [&]() -> Status {
    const int64_t first = 0;
    return embedding_forward_packed(seq, ids, std::span(&table_t, 1), std::span(&first, 1), table_t.rows, table_t.cols,
                                    out, errors, scale);
  });
}

Status embedding_forward(Sequence& seq, const Tensor& ids, const PackedColumnBlocks& table_t, const Tensor& out,
                         const Tensor& errors, float scale) {
  return detail::whole_op(seq, "embedding_forward", [&]() -> Status {
    return embedding_forward_packed(seq, ids, table_t.blocks, table_t.first, table_t.rows, table_t.cols, out, errors,
                                    scale);
  });
}

Status embedding_backward(Sequence& seq, const Tensor& ids, const Tensor& dy, const Tensor& dtable) {
  return detail::whole_op(seq, "embedding_backward", [&]() -> Status {
    const char* op = "embedding_backward";
    RILL_RETURN_IF_ERROR(detail::require_dtype(ids, DType::kU32, op, "ids"));
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(dy, op));
    RILL_RETURN_IF_ERROR(detail::require_dtype(dtable, DType::kF32, op, "dtable"));
    if (dtable.shape().size() != 2) return invalid_argument("embedding_backward: dtable must be [vocab, dim] f32");
    const uint64_t vocab = uint64_t(dtable.shape()[0]), dim = uint64_t(dtable.shape()[1]), tokens = ids.element_count();
    RILL_RETURN_IF_ERROR(detail::require_elements(dy, tokens * dim, op, "dy"));
    if (vocab * dim > UINT32_MAX) return out_of_range("embedding_backward: more than 2^32 elements");
    // One invocation per (row, column) walks every token.
    RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, tokens, op, "this many tokens"));
    const uint32_t wg = detail::elementwise_workgroup(seq);
    return seq.dispatch(
        {.kernel = "embedding/embedding_bwd_" + suffix,
         .bindings = {&ids, &dy, &dtable},
         .push = push_bytes(gpu::EmbeddingBackwardPush{uint32_t(tokens), uint32_t(vocab), uint32_t(dim)}),
         .groups = detail::groups_for(vocab * dim, wg),
         .spec = {gpu::spec("WG_SIZE", wg)},
         .flops = vocab * dim * tokens,
         .bytes = tokens * 4 + tokens * dim * dtype_size(dy.dtype()) + vocab * dim * 4});
  });
}

namespace {

Status softmax_dispatch(Sequence& seq, const Tensor& logits, const Tensor* targets, const Tensor& probs,
                        const Tensor* loss) {
  const char* op = "softmax";
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(logits, op));
  RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(logits, op));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(logits, probs, op, "probs"));
  if (targets) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*targets, DType::kU32, op, "targets"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*targets, rd.rows, op, "targets"));
    RILL_RETURN_IF_ERROR(detail::require_dtype(*loss, DType::kF32, op, "loss"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*loss, rd.rows, op, "loss"));
  }
  const uint64_t n = uint64_t(rd.rows) * rd.dim;
  // Three passes over each invocation's share of the row: widen the workgroup under a loop limit.
  const uint32_t wg = detail::reduction_workgroup(seq, rd.dim);
  RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, 3ull * ((rd.dim + wg - 1) / wg), op, "a row of this length"));
  return seq.dispatch(
      {.kernel = "softmax/softmax_xent_fwd" + std::string(detail::reduction_variant(seq)) + "_" + suffix,
       .bindings = {&logits, targets ? targets : &logits, &probs, loss ? loss : &probs},
       .push = push_bytes(gpu::SoftmaxPush{rd.rows, rd.dim}),
       .groups = detail::grid_for(rd.rows),
       .spec = {gpu::spec("WG_SIZE", wg), gpu::spec("HAS_TARGETS", targets != nullptr)},
       .flops = 4 * n,
       .bytes = 2 * n * dtype_size(logits.dtype())});
}

}  // namespace

Status softmax_forward(Sequence& seq, const Tensor& logits, const Tensor& probs) {
  return detail::whole_op(seq, "softmax_forward",
                          [&]() -> Status { return softmax_dispatch(seq, logits, nullptr, probs, nullptr); });
}

Status softmax_cross_entropy_forward(Sequence& seq, const Tensor& logits, const Tensor& targets, const Tensor& probs,
                                     const Tensor& loss) {
  return detail::whole_op(seq, "softmax_cross_entropy_forward",
                          [&]() -> Status { return softmax_dispatch(seq, logits, &targets, probs, &loss); });
}

Status softmax_cross_entropy_backward(Sequence& seq, const Tensor& probs, const Tensor& targets, const Tensor& dloss,
                                      const Tensor& dlogits) {
  return detail::whole_op(seq, "softmax_cross_entropy_backward", [&]() -> Status {
    const char* op = "softmax_cross_entropy_backward";
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(probs, op));
    RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(probs, op));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(probs, dlogits, op, "dlogits"));
    RILL_RETURN_IF_ERROR(detail::require_dtype(targets, DType::kU32, op, "targets"));
    RILL_RETURN_IF_ERROR(detail::require_elements(targets, rd.rows, op, "targets"));
    RILL_RETURN_IF_ERROR(detail::require_dtype(dloss, DType::kF32, op, "dloss"));
    RILL_RETURN_IF_ERROR(detail::require_elements(dloss, rd.rows, op, "dloss"));
    const uint64_t n = uint64_t(rd.rows) * rd.dim;
    const uint32_t wg = detail::elementwise_workgroup(seq);
    return seq.dispatch({.kernel = "softmax/softmax_xent_bwd_" + suffix,
                         .bindings = {&probs, &targets, &dloss, &dlogits},
                         .push = push_bytes(gpu::SoftmaxPush{rd.rows, rd.dim}),
                         .groups = detail::groups_for(n, wg),
                         .spec = {gpu::spec("WG_SIZE", wg)},
                         .flops = 2 * n,
                         .bytes = 2 * n * dtype_size(probs.dtype())});
  });
}

}  // namespace rill::ops
