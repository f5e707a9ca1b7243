// Matmul dispatch: shape rules, strides for transposes and broadcast, the tiling of each variant.
#include "rill/ops/matmul.hpp"

#include <algorithm>

#include "ops/kernel_plan.hpp"
#include "ops/op_common.hpp"

namespace rill::ops {
namespace {

constexpr const char* kOp = "matmul";

struct Push {
  uint32_t M, N, K;
  uint32_t a_rs, a_cs, a_bs;
  uint32_t b_rs, b_cs, b_bs;
  uint32_t c_bs;
};

struct Matrix {
  uint64_t batch, rows, cols;
};

Result<Matrix> as_matrix(const Tensor& t, const char* role) {
  if (!t.valid()) return invalid_argument(std::string("matmul: ") + role + " is empty");
  const auto& s = t.shape();
  if (s.size() < 2) return invalid_argument(std::string("matmul: ") + role + " " + t.describe() + " needs two dimensions");
  Matrix m{1, uint64_t(s[s.size() - 2]), uint64_t(s.back())};
  for (size_t i = 0; i + 2 < s.size(); ++i) m.batch *= uint64_t(s[i]);
  return m;
}

}  // namespace

Status matmul(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& o) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(a, kOp));
  RILL_ASSIGN_OR_RETURN(Matrix ma, as_matrix(a, "A"));
  RILL_ASSIGN_OR_RETURN(Matrix mb, as_matrix(b, "B"));
  RILL_ASSIGN_OR_RETURN(Matrix mc, as_matrix(c, "C"));
  if (b.dtype() != a.dtype() || c.dtype() != a.dtype())
    return invalid_argument("matmul: A, B and C must share one dtype (" + a.describe() + ", " + b.describe() + ", " +
                            c.describe() + ")");
  const uint64_t M = o.transpose_a ? ma.cols : ma.rows, K = o.transpose_a ? ma.rows : ma.cols;
  const uint64_t kb = o.transpose_b ? mb.cols : mb.rows, N = o.transpose_b ? mb.rows : mb.cols;
  if (kb != K) return invalid_argument("matmul: inner dimensions differ: " + a.describe() + " and " + b.describe());
  if (mc.rows != M || mc.cols != N)
    return invalid_argument("matmul: C " + c.describe() + " must be " + std::to_string(M) + " x " + std::to_string(N));
  if ((ma.batch != 1 && ma.batch != mc.batch) || (mb.batch != 1 && mb.batch != mc.batch))
    return invalid_argument("matmul: batch dimensions of " + a.describe() + " and " + b.describe() +
                            " must equal C's or be absent");
  if (mc.batch > 65535) return out_of_range("matmul: more than 65535 batches");
  if (c.element_count() > UINT32_MAX || a.element_count() > UINT32_MAX || b.element_count() > UINT32_MAX)
    return out_of_range("matmul: more than 2^32 elements in one operand");
  if (o.bias) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*o.bias, a.dtype(), kOp, "bias"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*o.bias, N, kOp, "bias"));
  }
  const Push push{uint32_t(M), uint32_t(N), uint32_t(K),
                  o.transpose_a ? 1u : uint32_t(K), o.transpose_a ? uint32_t(M) : 1u,
                  ma.batch == 1 ? 0u : uint32_t(M * K),
                  o.transpose_b ? 1u : uint32_t(N), o.transpose_b ? uint32_t(K) : 1u,
                  mb.batch == 1 ? 0u : uint32_t(K * N),
                  uint32_t(M * N)};
  // Tiling, family and variant: the kernel plan's (kernel_plan.cpp says why).
  const plan::MatmulPlan p = plan::matmul(plan::traits_of(seq), M, N, K);
  RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, p.inner_loops, kOp, "the inner dimension K"));
  const uint32_t block_m = p.wg_y * p.tm, block_n = p.wg_x * p.tn;
  const uint64_t es = dtype_size(a.dtype());
  return seq.dispatch({.kernel = "matmul/matmul_" + suffix,
                       .bindings = {&a, &b, o.bias ? o.bias : &c, &c},
                       .push = push_bytes(push),
                       .groups = {uint32_t((N + block_n - 1) / block_n), uint32_t((M + block_m - 1) / block_m),
                                  uint32_t(mc.batch)},
                       .spec = {spec_uint(p.register_kernel ? "SG" : "WG_X", p.wg_x), spec_uint("WG_Y", p.wg_y),
                                spec_uint("TM", p.tm), spec_uint("TN", p.tn), spec_uint("HAS_BIAS", o.bias != nullptr),
                                spec_uint("ACCUMULATE", o.accumulate)},
                       .variant = p.variant(),
                       .flops = 2 * M * N * K * mc.batch,
                       .bytes = es * (ma.batch * M * K + mb.batch * K * N + (o.accumulate ? 2 : 1) * mc.batch * M * N)});
}

}  // namespace rill::ops
