// RAII for Vulkan objects: one C++ value owns one handle and destroys it through its device's
// function table when it goes. Move-only. The Device must outlive every Unique made on it
// (ContextImpl's member order guarantees it for everything rill creates).
#pragma once

#include <source_location>
#include <string_view>
#include <utility>

#include "vk/device.hpp"
#include "vk/faults.hpp"

namespace rill::vk {

template <typename Handle, auto Destroy>
class Unique {
 public:
  Unique() = default;
  Unique(const Device& device, Handle handle) : device_(&device), handle_(handle) {}
  ~Unique() { reset(); }
  Unique(Unique&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, Handle(VK_NULL_HANDLE))) {}
  Unique& operator=(Unique&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, Handle(VK_NULL_HANDLE));
    }
    return *this;
  }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) (device_->fn().*Destroy)(device_->handle(), handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }

 private:
  const Device* device_ = nullptr;
  Handle handle_ = VK_NULL_HANDLE;
};

using UniqueFence = Unique<VkFence, &VolkDeviceTable::vkDestroyFence>;
using UniqueBuffer = Unique<VkBuffer, &VolkDeviceTable::vkDestroyBuffer>;
using UniqueDeviceMemory = Unique<VkDeviceMemory, &VolkDeviceTable::vkFreeMemory>;  // unmaps implicitly
using UniqueCommandPool = Unique<VkCommandPool, &VolkDeviceTable::vkDestroyCommandPool>;
using UniqueDescriptorPool = Unique<VkDescriptorPool, &VolkDeviceTable::vkDestroyDescriptorPool>;
using UniqueQueryPool = Unique<VkQueryPool, &VolkDeviceTable::vkDestroyQueryPool>;
using UniqueShaderModule = Unique<VkShaderModule, &VolkDeviceTable::vkDestroyShaderModule>;
using UniqueDescriptorSetLayout = Unique<VkDescriptorSetLayout, &VolkDeviceTable::vkDestroyDescriptorSetLayout>;
using UniquePipelineLayout = Unique<VkPipelineLayout, &VolkDeviceTable::vkDestroyPipelineLayout>;
using UniquePipelineCache = Unique<VkPipelineCache, &VolkDeviceTable::vkDestroyPipelineCache>;
using UniquePipeline = Unique<VkPipeline, &VolkDeviceTable::vkDestroyPipeline>;

// A primary command buffer allocated from `pool`, freed back to it. Declare it after the
// UniqueCommandPool it comes from so that it goes first: the validation layer (1.3.239) leaks a
// command buffer whose pool is destroyed before it is freed.
class UniqueCommandBuffer {
 public:
  UniqueCommandBuffer() = default;
  UniqueCommandBuffer(const Device& device, VkCommandPool pool, VkCommandBuffer cb)
      : device_(&device), pool_(pool), cb_(cb) {}
  ~UniqueCommandBuffer() { reset(); }
  UniqueCommandBuffer(UniqueCommandBuffer&& other) noexcept
      : device_(other.device_), pool_(other.pool_), cb_(std::exchange(other.cb_, VK_NULL_HANDLE)) {}
  UniqueCommandBuffer& operator=(UniqueCommandBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      pool_ = other.pool_;
      cb_ = std::exchange(other.cb_, VK_NULL_HANDLE);
    }
    return *this;
  }
  UniqueCommandBuffer(const UniqueCommandBuffer&) = delete;
  UniqueCommandBuffer& operator=(const UniqueCommandBuffer&) = delete;

  VkCommandBuffer get() const { return cb_; }
  explicit operator bool() const { return cb_ != VK_NULL_HANDLE; }

  void reset() {
    if (cb_ != VK_NULL_HANDLE) device_->fn().vkFreeCommandBuffers(device_->handle(), pool_, 1, &cb_);
    cb_ = VK_NULL_HANDLE;
  }

 private:
  const Device* device_ = nullptr;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
};

// Runs `create(&handle)` (a vkCreate* call, through the fault injector) and wraps what it made; a
// failure is checked through Device::check (which latches device loss) with `what` as its name.
template <typename UniqueT, typename Create>
Result<UniqueT> create_unique(Device& device, FaultInjector& faults, std::string_view what, Create&& create,
                              std::source_location where = std::source_location::current()) {
  decltype(std::declval<UniqueT>().get()) handle = VK_NULL_HANDLE;
  VkResult r = faults.run([&] { return create(&handle); });
  if (r != VK_SUCCESS) return device.check(r, what, where);
  return UniqueT(device, handle);
}

// One primary command buffer from `pool`.
inline Result<UniqueCommandBuffer> allocate_command_buffer(
    Device& device, FaultInjector& faults, VkCommandPool pool,
    std::source_location where = std::source_location::current()) {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkResult r = faults.run([&] { return device.fn().vkAllocateCommandBuffers(device.handle(), &info, &cb); });
  if (r != VK_SUCCESS) return device.check(r, "vkAllocateCommandBuffers", where);
  return UniqueCommandBuffer(device, pool, cb);
}

}  // namespace rill::vk
