// Matmul dispatch: shape rules, strides for transposes and broadcast, the tiling of each variant.
#include "rill/ops/matmul.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "ops/whole_op.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::ops {
namespace {

constexpr const char* kMatmulOp = "matmul";

using gpu::MatmulPush;

struct Matrix {
  uint64_t batch, rows, cols;
};

Result<Matrix> as_matrix(const Tensor& t, const char* role) {
  if (!t.valid()) return invalid_argument(std::string("matmul: ") + role + " is empty");
  const auto& s = t.shape();
  if (s.size() < 2)
    return invalid_argument(std::string("matmul: ") + role + " " + t.describe() + " needs two dimensions");
  Matrix m{1, uint64_t(s[s.size() - 2]), uint64_t(s.back())};
  for (size_t i = 0; i + 2 < s.size(); ++i) m.batch *= uint64_t(s[i]);
  return m;
}

// B in either form: its kernels' name prefix ("matmul/matmul_", "matmul/matmul_q8_", ...; the
// texel form's is "matmul/matmul_tx_" with the same ending), its tensors, bound at 1 (and 4, 5, ...
// after C), their bytes, and for a packed B the kernel for a few rows and the values per word.
struct BOperand {
  std::string kernel;
  std::vector<const Tensor*> bindings;
  uint64_t bytes = 0;
  std::string matvec_kernel;  // empty: dense
  uint32_t per_word = 0;      // 0: dense
};

// The checks on A, C and the bias common to both forms of B, and the dispatch. B is `mb` as
// matrices, kb x N after a transpose (its strides are already in `push`).
Status check_and_dispatch(Sequence& seq, const Tensor& a, const Matrix& mb, uint64_t kb, uint64_t N, const Tensor& c,
                          const MatmulOptions& o, MatmulPush push, const BOperand& b) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(a, kMatmulOp));
  RILL_ASSIGN_OR_RETURN(Matrix ma, as_matrix(a, "A"));
  RILL_ASSIGN_OR_RETURN(Matrix mc, as_matrix(c, "C"));
  if (c.dtype() != a.dtype())
    return invalid_argument("matmul: A and C must share one dtype (" + a.describe() + ", " + c.describe() + ")");
  const uint64_t M = o.transpose_a ? ma.cols : ma.rows, K = o.transpose_a ? ma.rows : ma.cols;
  if (kb != K)
    return invalid_argument("matmul: inner dimensions differ: " + a.describe() + " and B's " + std::to_string(kb));
  if (mc.rows != M || mc.cols != N)
    return invalid_argument("matmul: C " + c.describe() + " must be " + std::to_string(M) + " x " + std::to_string(N));
  if ((ma.batch != 1 && ma.batch != mc.batch) || (mb.batch != 1 && mb.batch != mc.batch))
    return invalid_argument("matmul: batch dimensions of A " + a.describe() + " and B (" + std::to_string(mb.batch) +
                            ") must equal C's or be absent");
  if (mc.batch > 65535) return out_of_range("matmul: more than 65535 batches");
  if (c.element_count() > UINT32_MAX || a.element_count() > UINT32_MAX)
    return out_of_range("matmul: more than 2^32 elements in one operand");
  if (o.bias) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*o.bias, a.dtype(), kMatmulOp, "bias"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*o.bias, N, kMatmulOp, "bias"));
  }
  push.M = uint32_t(M), push.N = uint32_t(N), push.K = uint32_t(K);
  push.a_rs = o.transpose_a ? 1u : uint32_t(K), push.a_cs = o.transpose_a ? uint32_t(M) : 1u;
  push.a_bs = ma.batch == 1 ? 0u : uint32_t(M * K);
  push.c_bs = uint32_t(M * N);
  std::vector<const Tensor*> bindings = {&a, b.bindings[0], o.bias ? o.bias : &c, &c};
  bindings.insert(bindings.end(), b.bindings.begin() + 1, b.bindings.end());
  const uint64_t es = dtype_size(a.dtype());
  const uint64_t bytes = es * (ma.batch * M * K + (o.accumulate ? 2 : 1) * mc.batch * M * N) + b.bytes;
  const plan::DeviceTraits traits = plan::traits_of(seq);
  // Rows per scale of packed int8 / int4 weights; 0 without scales (dense or f16 words).
  const uint32_t scale_group = b.per_word != 0 && b.per_word != gpu::kPackedF16PerWord ? push.b_group : 0;
  if (!b.matvec_kernel.empty()) {
    if (const auto v = plan::packed_matvec(traits, M, K, scale_group)) {
      RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, v->inner_loops, kMatmulOp, "the inner dimension K"));
      return seq.dispatch(
          {.kernel = b.matvec_kernel + suffix,
           .bindings = std::move(bindings),
           .push = push_bytes(push),
           .groups = {uint32_t((push.b_rs + v->workgroup * v->words - 1) / (v->workgroup * v->words)), 1,
                      uint32_t(mc.batch)},
           .spec = {gpu::spec("WG", v->workgroup), gpu::spec("ROWS", v->rows), gpu::spec("WORDS", v->words),
                    gpu::spec("HAS_BIAS", o.bias != nullptr), gpu::spec("ACCUMULATE", o.accumulate)},
           .flops = 2 * M * N * K * mc.batch,
           .bytes = bytes});
    }
  }
  // Tiling, family and variant: the kernel plan's (kernel_plan_matmul.cpp says why).
  const plan::MatmulShape shape{
      .m = M,
      .n = N,
      .k = K,
      .batches = mc.batch,
      .a_shared = push.a_bs == 0,
      .f16 = a.dtype() == DType::kF16,
      .rows_vectorizable = push.a_cs == 1 && (b.per_word != 0 || push.b_cs == 1) && K % 8 == 0 && N % 8 == 0,
      .packed_per_word = b.per_word,
      .packed_group = scale_group};
  push.batches = uint32_t(mc.batch);
  if (const auto coop = plan::cooperative_matmul(traits, shape)) {
    RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, coop->inner_loops, kMatmulOp, "the inner dimension K"));
    return seq.dispatch({.kernel = coop->emulated ? "matmul/matmul_coop_emulated_f16" : "matmul/matmul_coop_f16",
                         .bindings = std::move(bindings),
                         .push = push_bytes(push),
                         .groups = {uint32_t((N + coop->block_n() - 1) / coop->block_n()),
                                    uint32_t((M + coop->block_m() - 1) / coop->block_m()), uint32_t(mc.batch)},
                         .spec = {gpu::spec("WG", coop->workgroup()), gpu::spec("SG", coop->subgroup),
                                  gpu::spec("GROUPS_M", coop->groups_m), gpu::spec("GROUPS_N", coop->groups_n),
                                  gpu::spec("FRAGS_M", coop->frags_m), gpu::spec("FRAGS_N", coop->frags_n),
                                  gpu::spec("FM", coop->fm), gpu::spec("FN", coop->fn), gpu::spec("FK", coop->fk),
                                  gpu::spec("BUFFERS", coop->buffers), gpu::spec("BK", coop->depth),
                                  gpu::spec("HAS_BIAS", o.bias != nullptr), gpu::spec("ACCUMULATE", o.accumulate)},
                         .flops = 2 * M * N * K * mc.batch,
                         .bytes = bytes});
  }
  const plan::MatmulPlan p = plan::matmul(traits, shape);
  RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, p.inner_loops, kMatmulOp, "the inner dimension K"));
  const uint32_t block_m = p.wg_y * p.tm, block_n = p.wg_x * p.tn;
  // Folded batches are one wide C of batch * N columns (N below a tile: fewer groups than batches).
  const uint64_t columns = p.fold_batch ? N * mc.batch : N;
  static constexpr std::string_view kPrefix = "matmul/matmul_";
  const std::string kernel_name =  // outlives d (a view)
      p.texel_rows ? "matmul/matmul_tx_" + b.kernel.substr(kPrefix.size()) + suffix : b.kernel + suffix;
  // The shared-memory kernel's partial products (bound but unwritten without splits).
  const Tensor* partial = &c;
  if (!p.fold_batch && uint64_t(mc.batch) * p.splits > seq.device().caps.max_workgroup_count[2])
    return out_of_range("matmul: " + std::to_string(mc.batch) + " batches x " + std::to_string(p.splits) +
                        " splits of K (matmul_splits) are more workgroups than the device's " +
                        std::to_string(seq.device().caps.max_workgroup_count[2]) + " in z");
  if (p.splits > 1) {
    RILL_ASSIGN_OR_RETURN(partial, detail::workspace(seq, uint64_t(p.splits) * mc.batch * M * N, kMatmulOp));
  }
  const std::vector<const Tensor*> epilogue_bindings = {partial, bindings[2], &c};
  if (!p.register_kernel) bindings.push_back(partial);
  Dispatch d{.kernel = kernel_name,
             .bindings = std::move(bindings),
             .push = {},
             .groups = {uint32_t((columns + block_n - 1) / block_n), uint32_t((M + block_m - 1) / block_m),
                        p.fold_batch ? 1u : uint32_t(mc.batch * p.splits)},
             .spec = {p.register_kernel ? gpu::spec("SG", p.wg_x) : gpu::spec("WG_X", p.wg_x),
                      gpu::spec("WG_Y", p.wg_y), gpu::spec("TM", p.tm), gpu::spec("TN", p.tn),
                      gpu::spec("HAS_BIAS", o.bias != nullptr), gpu::spec("ACCUMULATE", o.accumulate)},
             .variant = p.variant(),
             .flops = 2 * M * N * K * mc.batch,
             .bytes = bytes};
  if (p.register_kernel) d.spec.push_back(gpu::spec("FOLD_BATCH", p.fold_batch));
  if (!p.register_kernel) {
    d.spec.push_back(gpu::spec("SPLITS", p.splits));
    d.spec.push_back(gpu::spec("GROUPED", p.grouped));
    d.spec.push_back(gpu::spec("BK", p.depth));
    d.spec.push_back(gpu::spec("STAGES", p.stages));
  }
  d.push = push_bytes(push);
  if (p.splits == 1) return seq.dispatch(d);
  d.bytes = bytes - es * mc.batch * M * N * (o.accumulate ? 2 : 1) + 4ull * p.splits * mc.batch * M * N;
  RILL_RETURN_IF_ERROR(seq.dispatch(d));
  const uint32_t wg = detail::elementwise_workgroup(seq);
  return seq.dispatch({.kernel = "matmul/matmul_split_sum_" + suffix,
                       .bindings = epilogue_bindings,
                       .push = push_bytes(push),
                       .groups = detail::groups_for(mc.batch * M * N, wg),
                       .spec = {gpu::spec("WG", wg), gpu::spec("SPLITS", p.splits),
                                gpu::spec("HAS_BIAS", o.bias != nullptr), gpu::spec("ACCUMULATE", o.accumulate)},
                       .flops = uint64_t(p.splits) * mc.batch * M * N,
                       .bytes = (4ull * p.splits + es * (o.accumulate ? 2 : 1)) * mc.batch * M * N});
}

}  // namespace

Status matmul(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& o) {
  return detail::whole_op(seq, "matmul", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Matrix mb, as_matrix(b, "B"));
    RILL_RETURN_IF_ERROR(detail::require_disjoint({{&c, "C"}}, {{&a, "A"}, {&b, "B"}, {o.bias, "bias"}}, kMatmulOp));
    if (b.dtype() != a.dtype())
      return invalid_argument("matmul: A, B and C must share one dtype (" + a.describe() + ", " + b.describe() + ", " +
                              c.describe() + ")");
    if (b.element_count() > UINT32_MAX) return out_of_range("matmul: more than 2^32 elements in one operand");
    const uint64_t K = o.transpose_b ? mb.cols : mb.rows, N = o.transpose_b ? mb.rows : mb.cols;
    MatmulPush push{};
    push.b_rs = o.transpose_b ? 1u : uint32_t(N), push.b_cs = o.transpose_b ? uint32_t(K) : 1u;
    push.b_bs = mb.batch == 1 ? 0u : uint32_t(K * N);
    return check_and_dispatch(
        seq, a, mb, K, N, c, o, push,
        {.kernel = "matmul/matmul_", .bindings = {&b}, .bytes = dtype_size(b.dtype()) * b.element_count()});
  });
}

Status matmul(Sequence& seq, const Tensor& a, const PackedWeights& b, const Tensor& c, const MatmulOptions& o) {
  return detail::whole_op(seq, "matmul", [&]() -> Status {
    if (!b.valid()) return invalid_argument("matmul: packed B is empty");
    if (o.transpose_b) return invalid_argument("matmul: packed B " + b.describe() + " cannot be transposed");
    RILL_RETURN_IF_ERROR(b.check(kMatmulOp));
    RILL_RETURN_IF_ERROR(detail::require_disjoint({{&c, "C"}}, {{&a, "A"}, {o.bias, "bias"}}, kMatmulOp));
    const bool scaled = has_scales(b.format);
    MatmulPush push{};
    push.b_rs = uint32_t(b.words.shape()[2]);
    push.b_bs = b.batch == 1 ? 0u : uint32_t(b.rows * b.words.shape()[2]);
    push.b_group = scaled ? b.group : 1u;
    push.s_bs = scaled && b.batch > 1 ? uint32_t(b.scales.element_count() / uint64_t(b.batch)) : 0u;
    const Matrix mb{uint64_t(b.batch), uint64_t(b.rows), uint64_t(b.cols)};
    const char* form = detail::packed_kernel_form(b.format);
    return check_and_dispatch(seq, a, mb, mb.rows, mb.cols, c, o, push,
                              {.kernel = std::string("matmul/matmul_") + form + "_",
                               .bindings = {&b.words, scaled ? &b.scales : &b.words},
                               .bytes = b.size_bytes(),
                               .matvec_kernel = std::string("matmul/matvec_") + form + "_",
                               .per_word = detail::packed_per_word(b.format)});
  });
}

}  // namespace rill::ops
