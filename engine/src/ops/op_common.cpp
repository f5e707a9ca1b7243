#include "ops/op_common.hpp"

#include <algorithm>
#include <numeric>

#include "access.hpp"
#include "kernel_plan.hpp"
#include "sequence_impl.hpp"
#include "tensor_storage.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill::ops::detail {

Result<std::string> float_suffix(const Tensor& t, const char* op) {
  if (!t.valid()) return invalid_argument(std::string(op) + ": a tensor is empty");
  if (t.dtype() == DType::kF32) return std::string("f32");
  if (t.dtype() == DType::kF16) return std::string("f16");
  return invalid_argument(std::string(op) + ": " + t.describe() + " must be f32 or f16");
}

const char* packed_kernel_form(WeightFormat format) {
  switch (format) {
    case WeightFormat::kInt8:
      return "q8";
    case WeightFormat::kInt4:
      return "q4";
    case WeightFormat::kF16:
      break;
  }
  return "w16";
}

uint32_t packed_per_word(WeightFormat format) {
  switch (format) {
    case WeightFormat::kInt8:
      return gpu::kPackedInt8PerWord;
    case WeightFormat::kInt4:
      return gpu::kPackedInt4PerWord;
    case WeightFormat::kF16:
      break;
  }
  return gpu::kPackedF16PerWord;
}

Status require_dtype(const Tensor& t, DType dtype, const char* op, const char* role) {
  if (!t.valid()) return invalid_argument(std::string(op) + ": " + role + " is empty");
  if (t.dtype() != dtype)
    return invalid_argument(std::string(op) + ": " + role + " " + t.describe() + " must be " + dtype_name(dtype));
  return Status::ok();
}

Status require_same_shape(const Tensor& a, const Tensor& b, const char* op, const char* role) {
  if (!b.valid()) return invalid_argument(std::string(op) + ": " + role + " is empty");
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    return invalid_argument(std::string(op) + ": " + role + " " + b.describe() + " must match " + a.describe());
  return Status::ok();
}

Status require_disjoint(std::initializer_list<Operand> outputs, std::initializer_list<Operand> inputs, const char* op) {
  auto storage = [](const Operand& o) -> const rill::detail::TensorStorage* {
    return o.tensor != nullptr && o.tensor->valid() ? rill::detail::Access::storage(*o.tensor).get() : nullptr;
  };
  auto check = [&](const Operand& out, const Operand& other) -> Status {
    const auto a = storage(out), b = storage(other);
    if (a && b && a->overlaps(*b))
      return invalid_argument(std::string(op) + ": " + out.role + " " + out.tensor->describe() + " and " + other.role +
                              " " + other.tensor->describe() + " share memory; this op does not run in place");
    return Status::ok();
  };
  for (auto o = outputs.begin(); o != outputs.end(); ++o) {
    for (auto p = std::next(o); p != outputs.end(); ++p) RILL_RETURN_IF_ERROR(check(*o, *p));
    for (const Operand& in : inputs) RILL_RETURN_IF_ERROR(check(*o, in));
  }
  return Status::ok();
}

Status require_elements(const Tensor& t, uint64_t elements, const char* op, const char* role) {
  if (!t.valid()) return invalid_argument(std::string(op) + ": " + role + " is empty");
  if (t.element_count() != elements)
    return invalid_argument(std::string(op) + ": " + role + " " + t.describe() + " must have " +
                            std::to_string(elements) + " elements");
  return Status::ok();
}

Result<std::vector<RowBlock>> binding_row_blocks(const Tensor& t, uint64_t max_bytes, const char* op,
                                                 uint64_t row_multiple) {
  const int64_t n = t.shape().empty() ? 1 : t.shape()[0];
  if (max_bytes == 0 || t.size_bytes() <= max_bytes) return std::vector<RowBlock>{{0, n}};
  const uint64_t row_bytes = t.size_bytes() / uint64_t(n);
  // Rows per block: whole multiples of the rows that keep each block's start aligned.
  const uint64_t aligned = std::lcm(Tensor::kViewAlignment / std::gcd(row_bytes, Tensor::kViewAlignment), row_multiple);
  const uint64_t per = max_bytes / row_bytes / aligned * aligned;
  if (per == 0)
    return out_of_range(std::string(op) + ": " + t.describe() + " is " + std::to_string(t.size_bytes()) +
                        " bytes, more than the device binds at once (" + std::to_string(max_bytes) + "), and " +
                        std::to_string(aligned) + " of its rows of " + std::to_string(row_bytes) +
                        " bytes do not fit one binding either");
  std::vector<RowBlock> blocks;
  for (int64_t first = 0; first < n; first += int64_t(per))
    blocks.push_back({first, std::min<int64_t>(int64_t(per), n - first)});
  return blocks;
}

Result<RowsDim> rows_and_dim(const Tensor& t, const char* op) {
  if (!t.valid()) return invalid_argument(std::string(op) + ": input is empty");
  const uint64_t dim = uint64_t(t.shape().back());
  const uint64_t rows = t.element_count() / dim;
  if (rows > UINT32_MAX || dim > UINT32_MAX || t.element_count() > UINT32_MAX)
    return out_of_range(std::string(op) + ": " + t.describe() + " has more than 2^32 elements");
  return RowsDim{uint32_t(rows), uint32_t(dim)};
}

std::array<uint32_t, 3> grid_for(uint64_t count) {
  if (count <= 65535) return {std::max(uint32_t(count), 1u), 1, 1};
  // Never wraps: a count past what y can hold saturates, and the dispatch refuses that grid by
  // name (workgroup count outside the device's limit) instead of running a smaller one.
  const uint64_t rows = (count + 65534) / 65535;
  return {65535, uint32_t(std::min<uint64_t>(rows, UINT32_MAX)), 1};
}

std::array<uint32_t, 3> groups_for(uint64_t n, uint32_t per_group) { return grid_for((n + per_group - 1) / per_group); }

Result<const Tensor*> workspace(Sequence& seq, uint64_t elements, const char* op) {
  auto& spaces = rill::detail::Access::impl(seq).workspaces;
  if (!spaces.empty() && spaces.back().element_count() >= elements) return &spaces.back();
  // Earlier dispatches may still name the smaller one: keep it alive with the recording.
  RILL_ASSIGN_OR_RETURN(Tensor t,
                        rill::detail::make_tensor(rill::detail::Access::impl(seq).ctx, DType::kF32, {int64_t(elements)},
                                                  std::string(op) + " workspace", MemoryPool::kActivations));
  spaces.push_back(std::move(t));
  return &spaces.back();
}

uint64_t loop_budget(const Sequence& seq) { return plan::traits_of(seq).loop_budget; }

Status check_loop_budget(const Sequence& seq, uint64_t iterations, const char* op, const char* what) {
  return plan::check_loop_budget(plan::traits_of(seq), seq.device(), iterations, op, what);
}

uint32_t elementwise_workgroup(const Sequence& seq) {
  const DeviceCaps& caps = seq.device().caps;
  return std::min({256u, caps.max_workgroup_invocations, caps.max_workgroup_size[0]});
}

const char* reduction_variant(const Sequence& seq) {
  return seq.device().caps.subgroup_arithmetic ? "" : "_nosubgroup";
}

std::string register_kernel(const std::string& stem, uint32_t vector_width, const std::string& suffix) {
  return stem + (vector_width == 4 ? "_vec4_" : "_") + suffix;
}

uint32_t reduction_workgroup(const Sequence& seq, uint64_t dim) {
  return plan::reduction_workgroup(plan::traits_of(seq), dim);
}

}  // namespace rill::ops::detail
