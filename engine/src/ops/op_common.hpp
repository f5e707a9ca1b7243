// Shared checks and launch geometry for ops: shape/dtype validation with messages that name the
// tensor, row grids that stay under the 65535-group limit, and the per-device reduction width.
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include "rill/ops/packed_weights.hpp"
#include "rill/sequence.hpp"
#include "rill/tensor.hpp"

namespace rill::ops::detail {

// "f32" or "f16" suffix of the kernel for this storage type; InvalidArgument for other dtypes.
Result<std::string> float_suffix(const Tensor& t, const char* op);

// The packed weight form's part of its kernels' names ("q8", "q4", "w16") and its values per word.
const char* packed_kernel_form(WeightFormat format);
uint32_t packed_per_word(WeightFormat format);

Status require_dtype(const Tensor& t, DType dtype, const char* op, const char* role);
Status require_same_shape(const Tensor& a, const Tensor& b, const char* op, const char* role);
Status require_elements(const Tensor& t, uint64_t elements, const char* op, const char* role);
// A tensor and the name the op's errors give it.
struct Operand {
  const Tensor* tensor;  // null: absent (skipped)
  const char* role;
};
// InvalidArgument, naming both, where an output shares memory with an input or another output (one
// tensor, or views of one): these ops read inputs after writing outputs, so in place is wrong.
Status require_disjoint(std::initializer_list<Operand> outputs, std::initializer_list<Operand> inputs, const char* op);

struct RowsDim {
  uint32_t rows = 0, dim = 0;
};
// Rows = product of leading dimensions, dim = last; both must fit in 32 bits.
Result<RowsDim> rows_and_dim(const Tensor& t, const char* op);

// Rows [first, first + count) of a tensor's first dimension.
struct RowBlock {
  int64_t first = 0, count = 0;
};
// Row blocks of `t` that each fit one storage binding of max_bytes (0: no limit) and start a
// multiple of Tensor::kViewAlignment bytes in (for Tensor::rows), and at a multiple of
// row_multiple rows: the whole tensor where it fits. OutOfRange, naming the op, where the fewest
// rows a block may hold would not fit.
Result<std::vector<RowBlock>> binding_row_blocks(const Tensor& t, uint64_t max_bytes, const char* op,
                                                 uint64_t row_multiple = 1);

// Workgroups for `count` independent items (rows), spread over y beyond 65535 in x. A count no
// device can launch gives a grid the dispatch refuses (never a wrapped, smaller one).
std::array<uint32_t, 3> grid_for(uint64_t count);
// Groups of `per_group` invocations covering n elements (1-D, spread like grid_for).
std::array<uint32_t, 3> groups_for(uint64_t n, uint32_t per_group);

// Workgroup size for one-row-per-workgroup reductions over rows of `dim` (0: any): the kernel
// plan's choice (kernel_plan.hpp).
uint32_t reduction_workgroup(const Sequence& seq, uint64_t dim = 0);

// Workgroup width of one-invocation-per-element kernels: 256, or the device's limit below it.
uint32_t elementwise_workgroup(const Sequence& seq);

// The variant of a kernel built on rill_reduce.glsl for the sequence's device: "_nosubgroup"
// (reductions through shared memory) where it lacks subgroup arithmetic, else "".
const char* reduction_variant(const Sequence& seq);

// "<op>/<stem>_" + "vec4_" (vector_width 4: the variant compiled with RILL_VECTOR_ROWS) + suffix.
std::string register_kernel(const std::string& stem, uint32_t vector_width, const std::string& suffix);

// A workspace of at least `elements` f32 values owned by the sequence (for intermediate results
// within one op; its contents do not survive to the next op). The sequence keeps one and reuses it
// while it is large enough, so a replayed recording holds one workspace, not one per op.
Result<const Tensor*> workspace(Sequence& seq, uint64_t elements, const char* op);

// How many loop iterations one invocation may run on this device (see the quirks table); a large
// number where the driver sets no limit. Ops keep their per-invocation serial work below it.
// (Shorthands for the kernel plan's traits, kernel_plan.hpp.)
uint64_t loop_budget(const Sequence& seq);
// OutOfRange naming the op when `iterations` per invocation would exceed the budget.
Status check_loop_budget(const Sequence& seq, uint64_t iterations, const char* op, const char* what);

}  // namespace rill::ops::detail
