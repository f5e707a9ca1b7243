// rill::Tensor accessors, dtype helpers, and the release of a tensor's memory when its storage goes.
#include "rill/tensor.hpp"

#include "access.hpp"
#include "context_impl.hpp"
#include "core/host_memory_guard.hpp"

namespace rill {
namespace detail {

TensorStorage::~TensorStorage() {
  if (!allocation || !context) return;
  ContextImpl* ctx = context.get();
  if (parent) {  // a view: the parent releases the memory
    if (texel_view) ctx->submissions->retire(last_use, [view = std::move(texel_view)] {});
    return;
  }
  vk::Allocation a = allocation;
  ctx->submissions->retire(last_use, [ctx, a, view = std::move(texel_view)]() mutable {
    view.reset();
    ctx->allocator->release(a);
  });
}

}  // namespace detail

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kI32: return "i32";
    case DType::kU32: return "u32";
    case DType::kU8: return "u8";
  }
  return "?";
}

uint32_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: return 2;
    case DType::kU8: return 1;
  }
  return 0;
}

Tensor::~Tensor() = default;

namespace {
const std::vector<int64_t> kNoShape;
const std::string kNoName;

// A view of `storage`'s memory, shape and name still to be set. Its parent is set first: a view
// destroyed half-built (its shape or name ran out of host memory) must leave the memory to the
// parent, not release it under the parent (and under the work that uses it).
std::shared_ptr<detail::TensorStorage> new_view(const std::shared_ptr<detail::TensorStorage>& storage) {
  auto view = std::make_shared<detail::TensorStorage>();
  view->parent = storage->parent ? storage->parent : storage;
  view->context = storage->context;
  view->allocation = storage->allocation;
  view->pool = storage->pool;
  view->dtype = storage->dtype;
  view->last_use = storage->last_use;
  return view;
}
}  // namespace

DType Tensor::dtype() const { return storage_ ? storage_->dtype : DType::kF32; }
const std::vector<int64_t>& Tensor::shape() const { return storage_ ? storage_->shape : kNoShape; }
uint64_t Tensor::element_count() const { return storage_ ? storage_->elements : 0; }
uint64_t Tensor::size_bytes() const { return storage_ ? storage_->bytes : 0; }
const std::string& Tensor::name() const { return storage_ ? storage_->name : kNoName; }

std::string Tensor::describe() const {
  if (!storage_) return "<empty tensor>";
  std::string s = (storage_->name.empty() ? std::string("tensor") : storage_->name) + " " + dtype_name(storage_->dtype) + "[";
  for (size_t i = 0; i < storage_->shape.size(); ++i) s += (i ? ", " : "") + std::to_string(storage_->shape[i]);
  return s + "]";
}

Result<Tensor> Tensor::reshaped(std::vector<int64_t> shape) const {
  return detail::host_memory_guarded("reshaped", [&]() -> Result<Tensor> {
    if (!storage_) return invalid_argument("reshaped: the tensor is empty");
    if (shape.empty()) return invalid_argument("reshaped: the new shape of " + describe() + " has no dimensions");
    uint64_t elements = 1;
    for (int64_t d : shape) {
      if (d < 1)
        return invalid_argument("reshaped: every dimension of the new shape of " + describe() + " must be >= 1");
      if (elements > UINT64_MAX / uint64_t(d)) return invalid_argument("reshaped: the new shape overflows");
      elements *= uint64_t(d);
    }
    if (elements != storage_->elements)
      return invalid_argument("reshaped: " + describe() + " has " + std::to_string(storage_->elements) +
                              " elements, the new shape " + std::to_string(elements));
    auto view = new_view(storage_);
    view->shape = std::move(shape);
    view->elements = elements;
    view->bytes = storage_->bytes;
    view->name = storage_->name;
    return detail::Access::tensor(std::move(view));
  });
}

Result<Tensor> Tensor::rows(int64_t first, int64_t count) const {
  return detail::host_memory_guarded("rows", [&]() -> Result<Tensor> {
    if (!storage_) return invalid_argument("rows: the tensor is empty");
    const std::vector<int64_t>& shape = storage_->shape;
    const int64_t n = shape.empty() ? 1 : shape[0];
    if (first < 0 || count < 1 || first > n || count > n - first)
      return invalid_argument("rows: [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                              std::to_string(count) + ") is not within the " + std::to_string(n) + " rows of " +
                              describe());
    const uint64_t row_elements = storage_->elements / uint64_t(n);
    const uint64_t row_bytes = row_elements * dtype_size(storage_->dtype), skip = uint64_t(first) * row_bytes;
    if (skip % kViewAlignment != 0)
      return invalid_argument("rows: row " + std::to_string(first) + " of " + describe() + " starts " +
                              std::to_string(skip) + " bytes in, not a multiple of " + std::to_string(kViewAlignment));
    auto view = new_view(storage_);
    view->allocation.offset += skip;
    view->allocation.size -= skip;
    view->shape = shape.empty() ? std::vector<int64_t>{count} : shape;
    view->shape[0] = count;
    view->elements = uint64_t(count) * row_elements;
    view->bytes = uint64_t(count) * row_bytes;
    view->name = storage_->name + "[" + std::to_string(first) + ":" + std::to_string(first + count) + "]";
    return detail::Access::tensor(std::move(view));
  });
}

}  // namespace rill
