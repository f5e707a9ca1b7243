// Tensor: a typed, shaped buffer in device memory, sub-allocated from the context's pools.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rill/export.hpp"
#include "rill/status.hpp"
#include "rill/types.hpp"

namespace rill {

namespace detail {
struct TensorStorage;
struct Access;  // the engine's own access to the implementation (engine/src/access.hpp)
}

class RILL_API Tensor {
 public:
  Tensor() = default;  // empty; valid() is false
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor();

  bool valid() const { return storage_ != nullptr; }
  DType dtype() const;
  const std::vector<int64_t>& shape() const;
  uint64_t element_count() const;
  uint64_t size_bytes() const;
  const std::string& name() const;
  std::string describe() const;  // "name f16[4, 7]"
  // A view of the same memory with another shape of the same element count (no copy). Writes
  // through either are seen by both; the memory lives while any of them does.
  Result<Tensor> reshaped(std::vector<int64_t> shape) const;
  // A view of rows [first, first + count) of the first dimension (no copy; the other dimensions
  // kept, elements for a 1-D tensor): a part of a tensor too large for one kernel binding, or one
  // output's columns. Its start must lie a multiple of kViewAlignment bytes into the tensor, where
  // every device accepts a binding's offset.
  Result<Tensor> rows(int64_t first, int64_t count) const;
  static constexpr uint64_t kViewAlignment = 256;

 private:
  friend struct detail::Access;
  explicit Tensor(std::shared_ptr<detail::TensorStorage> storage) : storage_(std::move(storage)) {}
  // Shared, so that a recorded sequence keeps what it binds alive.
  std::shared_ptr<detail::TensorStorage> storage_;
};

}  // namespace rill
