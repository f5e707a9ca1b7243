// What a rill::Tensor points to: its memory in a context and its metadata, shared by the tensor,
// its views and the sequences that use it.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "rill/tensor.hpp"
#include "vk/memory.hpp"

namespace rill::detail {

class ContextImpl;

// A tensor's memory and metadata. Destroyed when the last Tensor or sequence referencing it goes;
// its memory is released only once the GPU has finished the last submission that used it.
struct TensorStorage {
  std::shared_ptr<ContextImpl> context;
  vk::Allocation allocation;
  vk::PoolKind pool = vk::PoolKind::kActivations;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  std::string name;
  uint64_t last_use = 0;  // serial of the last submission that used it
  // Set for a view (Tensor::reshaped): the storage that owns the memory, kept alive by the view.
  std::shared_ptr<TensorStorage> parent;
  // Its bytes as 4-element texels, made when a kernel first binds it as a uniform texel buffer
  // (vk/texel_views.hpp); destroyed with the memory, after the last submission that used it.
  vk::UniqueBufferView texel_view;

  // Records a use by submission `serial` here and in the owner of the memory.
  void mark_used(uint64_t serial) {
    for (TensorStorage* s = this; s; s = s->parent.get()) s->last_use = std::max(s->last_use, serial);
  }

  ~TensorStorage();
  VkBuffer buffer() const { return allocation.buffer(); }
  uint64_t offset() const { return allocation.offset; }
  // Whether the two share any byte (one tensor, or views of one).
  bool overlaps(const TensorStorage& other) const {
    return buffer() == other.buffer() && offset() < other.offset() + other.bytes && other.offset() < offset() + bytes;
  }
};

}  // namespace rill::detail
