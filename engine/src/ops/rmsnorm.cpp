// RMSNorm dispatch: validates shapes and dtypes, picks the kernel for the storage type and the
// workgroup width for the device, and declares each dispatch's FLOPs and bytes for profiles.
#include "rill/ops/rmsnorm.hpp"

#include "ops/op_common.hpp"

namespace rill::ops {
namespace {

constexpr const char* kOp = "rmsnorm";

struct ForwardPush {
  uint32_t rows, dim;
  float eps;
};
struct BackwardPush {
  uint32_t rows, dim;
};

Status check_gain(const Tensor* gain, const Tensor& x, uint32_t dim) {
  if (!gain) return Status::ok();
  RILL_RETURN_IF_ERROR(detail::require_dtype(*gain, x.dtype(), kOp, "gain"));
  return detail::require_elements(*gain, dim, kOp, "gain");
}

// Workgroup width for rows of `dim`: the device's choice, widened until each invocation's two
// passes over its share of the row stay under a driver loop limit.
uint32_t row_workgroup(const Sequence& seq, uint32_t dim) {
  uint32_t wg = detail::reduction_workgroup(seq);
  while (wg < 256 && 3ull * (dim + wg - 1) / wg > detail::loop_budget(seq)) wg *= 2;
  return wg;
}

Status check_common(Sequence& seq, const Tensor& x, const Tensor& rstd, detail::RowsDim rd) {
  if (!seq.device().caps.subgroup_arithmetic)
    return unimplemented("rmsnorm needs subgroup arithmetic in compute shaders, which " + seq.device().name + " lacks");
  RILL_RETURN_IF_ERROR(detail::require_dtype(rstd, DType::kF32, kOp, "rstd"));
  (void)x;
  RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, 3ull * ((rd.dim + 255) / 256), kOp, "a row of this length"));
  return detail::require_elements(rstd, rd.rows, kOp, "rstd");
}

}  // namespace

Status rmsnorm_forward(Sequence& seq, const Tensor& x, const Tensor* gain, const Tensor& y, const Tensor& rstd,
                       float eps) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(x, kOp));
  RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(x, kOp));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(x, y, kOp, "y"));
  RILL_RETURN_IF_ERROR(check_gain(gain, x, rd.dim));
  RILL_RETURN_IF_ERROR(check_common(seq, x, rstd, rd));
  if (!(eps >= 0.0f)) return invalid_argument("rmsnorm: eps must be >= 0");
  const uint32_t wg = row_workgroup(seq, rd.dim);
  const uint64_t n = uint64_t(rd.rows) * rd.dim, es = dtype_size(x.dtype());
  return seq.dispatch({.kernel = "rmsnorm/rmsnorm_fwd_" + suffix,
                       .bindings = {&x, gain ? gain : &x, &y, &rstd},
                       .push = push_bytes(ForwardPush{rd.rows, rd.dim, eps}),
                       .groups = detail::grid_for(rd.rows),
                       .spec = {spec_uint("WG_SIZE", wg), spec_uint("HAS_GAIN", gain != nullptr)},
                       .flops = 4 * n,
                       .bytes = 3 * n * es + 4ull * rd.rows});
}

Status rmsnorm_residual_forward(Sequence& seq, const Tensor& x, const Tensor& residual, const Tensor* gain,
                                const Tensor& h, const Tensor& y, const Tensor& rstd, float eps) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(x, kOp));
  RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(x, kOp));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(x, residual, kOp, "residual"));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(x, h, kOp, "h"));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(x, y, kOp, "y"));
  RILL_RETURN_IF_ERROR(check_gain(gain, x, rd.dim));
  RILL_RETURN_IF_ERROR(check_common(seq, x, rstd, rd));
  if (!(eps >= 0.0f)) return invalid_argument("rmsnorm: eps must be >= 0");
  const uint32_t wg = row_workgroup(seq, rd.dim);
  const uint64_t n = uint64_t(rd.rows) * rd.dim, es = dtype_size(x.dtype());
  return seq.dispatch({.kernel = "rmsnorm/rmsnorm_residual_fwd_" + suffix,
                       .bindings = {&x, &residual, gain ? gain : &x, &h, &y, &rstd},
                       .push = push_bytes(ForwardPush{rd.rows, rd.dim, eps}),
                       .groups = detail::grid_for(rd.rows),
                       .spec = {spec_uint("WG_SIZE", wg), spec_uint("HAS_GAIN", gain != nullptr)},
                       .flops = 5 * n,
                       .bytes = 6 * n * es + 4ull * rd.rows});
}

Status rmsnorm_backward(Sequence& seq, const Tensor& x, const Tensor* gain, const Tensor& rstd, const Tensor& dy,
                        const Tensor& dx, const Tensor* dgain, bool accumulate) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(x, kOp));
  RILL_ASSIGN_OR_RETURN(detail::RowsDim rd, detail::rows_and_dim(x, kOp));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(x, dy, kOp, "dy"));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(x, dx, kOp, "dx"));
  RILL_RETURN_IF_ERROR(check_gain(gain, x, rd.dim));
  RILL_RETURN_IF_ERROR(check_common(seq, x, rstd, rd));
  if (dgain && !gain) return invalid_argument("rmsnorm_backward: dgain needs a gain");
  if (dgain) {
    // One invocation per column sums every row.
    RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, rd.rows, kOp, "dgain over this many rows"));
    RILL_RETURN_IF_ERROR(detail::require_dtype(*dgain, DType::kF32, kOp, "dgain"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*dgain, rd.dim, kOp, "dgain"));
  }
  const uint32_t wg = row_workgroup(seq, rd.dim);
  const uint64_t n = uint64_t(rd.rows) * rd.dim, es = dtype_size(x.dtype());
  RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "rmsnorm/rmsnorm_bwd_" + suffix,
                                     .bindings = {&x, gain ? gain : &x, &rstd, &dy, &dx},
                                     .push = push_bytes(BackwardPush{rd.rows, rd.dim}),
                                     .groups = detail::grid_for(rd.rows),
                                     .spec = {spec_uint("WG_SIZE", wg), spec_uint("HAS_GAIN", gain != nullptr),
                                              spec_uint("ACCUMULATE", accumulate)},
                                     .flops = 7 * n,
                                     .bytes = (accumulate ? 4 : 3) * n * es + 4ull * rd.rows}));
  if (!dgain) return Status::ok();
  return seq.dispatch({.kernel = "rmsnorm/rmsnorm_bwd_gain_" + suffix,
                       .bindings = {&x, &rstd, &dy, dgain},
                       .push = push_bytes(BackwardPush{rd.rows, rd.dim}),
                       .groups = detail::groups_for(rd.dim, 64),
                       .flops = 3 * n,
                       .bytes = 2 * n * es + 4ull * rd.rows + 4ull * rd.dim});
}

}  // namespace rill::ops
