// Internal state behind rill::Context, shared (by shared_ptr) with every tensor and sequence made
// from it so that the device outlives them whatever order the application destroys things in.
// Member order is destruction order in reverse: pipelines and memory go before the device, the
// device before the instance.
#pragma once

#include <memory>
#include <new>
#include <string>

#include "core/host_memory_guard.hpp"
#include "core/profiler.hpp"
#include "rill/context.hpp"
#include "tensor_storage.hpp"
#include "vk/device.hpp"
#include "vk/faults.hpp"
#include "vk/instance.hpp"
#include "vk/memory.hpp"
#include "vk/pipelines.hpp"
#include "vk/submissions.hpp"
#include "vk/unique.hpp"

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
  std::string tuned_plan;   // the tuning file's plan (ContextOptions::tuning_path), validated; empty: none
  vk::UniqueCommandPool transfer_pool;  // one-shot copies for Context::upload/download

  // Runs a one-shot command buffer on `used` and waits for it, then calls `done(status)`, which
  // frees what the commands used. Where the wait fails after the submission, the GPU may still run
  // them: `done` and the command buffer go to the retire queue, and `used` is marked with the
  // submission, so that neither its memory nor theirs is freed before the GPU has finished.
  template <typename Record, typename Done>
  Status run_once(Record&& record, TensorStorage& used, Done done);
  Status check_usable() const {
    if (device->lost()) return device->lost_status();
    return submissions->given_up() ? submissions->given_up_status() : Status::ok();
  }
  // The allocator's allocate, where memory freed while the GPU still used it comes back in time:
  // an allocation that runs out while such memory waits for its work is tried again after it.
  Result<vk::Allocation> allocate(uint64_t bytes, vk::PoolKind pool);
  // Waits until the GPU no longer uses the tensor.
  Status wait_for(const TensorStorage& storage);
  Status write_profile();
};

// Context::tensor for code that holds the context's implementation (a sequence's op workspaces).
Result<Tensor> make_tensor(const std::shared_ptr<ContextImpl>& context, DType dtype, std::vector<int64_t> shape,
                           std::string name, MemoryPool pool);

template <typename Record, typename Done>
Status ContextImpl::run_once(Record&& record, TensorStorage& used, Done done) {
  const auto& fn = device->fn();
  auto command_buffer = vk::allocate_command_buffer(*device, faults, transfer_pool.get());
  if (!command_buffer.is_ok()) {
    done(command_buffer.status());
    return command_buffer.status();
  }
  const VkCommandBuffer cb = command_buffer.value().get();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  Status status = device->check(fn.vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  if (status.is_ok()) {
    record(cb);
    status = device->check(fn.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  }
  if (!status.is_ok()) {
    done(status);
    return status;
  }
  // `done` runs on every path, running out of host memory too: it releases what the work used.
  const Result<uint64_t> serial = [&]() -> Result<uint64_t> {
    try {
      return submissions->submit(std::span<const VkCommandBuffer>(&cb, 1));
    } catch (const std::bad_alloc&) {  // nothing was submitted
      return out_of_host_memory("submitting");  // never throws: `done` below must run
    }
  }();
  if (!serial.is_ok()) {
    done(serial.status());
    return serial.status();
  }
  used.mark_used(serial.value());
  try {
    status = submissions->wait(serial.value());
  } catch (const std::bad_alloc&) {  // the work may still run: retired below, not released under it
    status = out_of_host_memory("waiting for the GPU");  // never throws: the retirement must happen
  }
  if (status.is_ok()) {
    done(status);
  } else {
    // The retiree says only that the wait failed: copying `status` could run out of memory here.
    submissions->retire(serial.value(), [done = std::move(done), used = std::move(command_buffer).value()]() mutable {
      done(unavailable("wait failed"));
    });
  }
  return status;
}

}  // namespace rill::detail
