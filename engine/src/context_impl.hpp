// Internal state behind rill::Context, shared (by shared_ptr) with every tensor and sequence made
// from it so that the device outlives them whatever order the application destroys things in.
// Member order is destruction order in reverse: pipelines and memory go before the device, the
// device before the instance.
#pragma once

#include <memory>
#include <string>

#include "core/profiler.hpp"
#include "rill/context.hpp"
#include "vk/device.hpp"
#include "vk/faults.hpp"
#include "vk/instance.hpp"
#include "vk/memory.hpp"
#include "vk/pipelines.hpp"
#include "vk/submissions.hpp"

namespace rill::detail {

class ContextImpl : public std::enable_shared_from_this<ContextImpl> {
 public:
  ~ContextImpl();

  Profiler profiler;  // first: every layer below may report to it
  uint64_t query_pools_created = 0;
  std::unique_ptr<vk::Instance> instance;
  std::unique_ptr<vk::Device> device;
  vk::FaultInjector faults;
  std::unique_ptr<vk::Allocator> allocator;
  std::unique_ptr<vk::Submissions> submissions;
  std::unique_ptr<vk::PipelineManager> pipelines;
  std::string selection_reason;
  std::string kernel_plan;  // ContextOptions::kernel_plan or RILL_KERNEL_PLAN, validated at creation
  VkCommandPool transfer_pool = VK_NULL_HANDLE;  // one-shot copies for Context::upload/download

  // Runs a one-shot command buffer and waits for it.
  template <typename Record>
  Status run_once(Record&& record);
  Status check_usable() const { return device->lost() ? device->lost_status() : Status::ok(); }
  // Waits until the GPU no longer uses the tensor.
  Status wait_for(const TensorStorage& storage);
  Status write_profile();
};

}  // namespace rill::detail

namespace rill::detail {

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

  // Records a use by submission `serial` here and in the owner of the memory.
  void mark_used(uint64_t serial) {
    for (TensorStorage* s = this; s; s = s->parent.get()) s->last_use = std::max(s->last_use, serial);
  }

  ~TensorStorage();
  VkBuffer buffer() const { return allocation.block->buffer; }
  uint64_t offset() const { return allocation.offset; }
};

// Context::tensor for code that holds the context's implementation (a sequence's op workspaces).
Result<Tensor> make_tensor(const std::shared_ptr<ContextImpl>& context, DType dtype, std::vector<int64_t> shape,
                           std::string name, MemoryPool pool);

template <typename Record>
Status ContextImpl::run_once(Record&& record) {
  const auto& fn = device->fn();
  VkDevice dev = device->handle();
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = transfer_pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkResult r = faults.run([&] { return fn.vkAllocateCommandBuffers(dev, &alloc, &cb); });
  if (r != VK_SUCCESS) return device->check(r, "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  Status status = device->check(fn.vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  if (status.is_ok()) {
    record(cb);
    status = device->check(fn.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  }
  if (status.is_ok()) {
    auto serial = submissions->submit(std::span<const VkCommandBuffer>(&cb, 1));
    status = serial.is_ok() ? submissions->wait(serial.value()) : serial.status();
  }
  fn.vkFreeCommandBuffers(dev, transfer_pool, 1, &cb);
  return status;
}

}  // namespace rill::detail
