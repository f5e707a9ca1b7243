// RAII for Vulkan objects: one C++ value owns one handle and destroys it through its device's
// function table when it goes. Move-only. The Device must outlive every Unique made on it
// (ContextImpl's member order guarantees it for everything rill creates).
#pragma once

#include <string_view>
#include <utility>

#include "vk/device.hpp"
#include "vk/faults.hpp"

namespace rill::vk {

// How a handle goes: vkDestroy*(device, handle, nullptr) through the device's function table.
template <typename Handle, auto Destroy>
struct DestroyWith {
  const Device* device = nullptr;
  void operator()(Handle handle) const { (device->fn().*Destroy)(device->handle(), handle, nullptr); }
};
// A command buffer goes back to the pool it came from.
struct FreeToPool {
  const Device* device = nullptr;
  VkCommandPool pool = VK_NULL_HANDLE;
  void operator()(VkCommandBuffer cb) const { device->fn().vkFreeCommandBuffers(device->handle(), pool, 1, &cb); }
};

template <typename Handle, typename Deleter>
class Unique {
 public:
  Unique() = default;
  Unique(Deleter deleter, Handle handle) : deleter_(deleter), handle_(handle) {}
  ~Unique() { reset(); }
  Unique(Unique&& other) noexcept
      : deleter_(other.deleter_), handle_(std::exchange(other.handle_, Handle(VK_NULL_HANDLE))) {}
  Unique& operator=(Unique&& other) noexcept {
    if (this != &other) {
      reset();
      deleter_ = other.deleter_;
      handle_ = std::exchange(other.handle_, Handle(VK_NULL_HANDLE));
    }
    return *this;
  }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) deleter_(handle_);
    handle_ = VK_NULL_HANDLE;
  }
  // Gives the handle up without destroying it (a resource the GPU may still use, leaked).
  Handle release() { return std::exchange(handle_, Handle(VK_NULL_HANDLE)); }

 private:
  Deleter deleter_{};
  Handle handle_ = VK_NULL_HANDLE;
};

template <typename Handle, auto Destroy>
using UniqueDestroyed = Unique<Handle, DestroyWith<Handle, Destroy>>;
using UniqueFence = UniqueDestroyed<VkFence, &VolkDeviceTable::vkDestroyFence>;
using UniqueBuffer = UniqueDestroyed<VkBuffer, &VolkDeviceTable::vkDestroyBuffer>;
using UniqueBufferView = UniqueDestroyed<VkBufferView, &VolkDeviceTable::vkDestroyBufferView>;
using UniqueDeviceMemory = UniqueDestroyed<VkDeviceMemory, &VolkDeviceTable::vkFreeMemory>;  // unmaps implicitly
using UniqueCommandPool = UniqueDestroyed<VkCommandPool, &VolkDeviceTable::vkDestroyCommandPool>;
using UniqueDescriptorPool = UniqueDestroyed<VkDescriptorPool, &VolkDeviceTable::vkDestroyDescriptorPool>;
using UniqueQueryPool = UniqueDestroyed<VkQueryPool, &VolkDeviceTable::vkDestroyQueryPool>;
using UniqueShaderModule = UniqueDestroyed<VkShaderModule, &VolkDeviceTable::vkDestroyShaderModule>;
using UniqueDescriptorSetLayout =
    UniqueDestroyed<VkDescriptorSetLayout, &VolkDeviceTable::vkDestroyDescriptorSetLayout>;
using UniquePipelineLayout = UniqueDestroyed<VkPipelineLayout, &VolkDeviceTable::vkDestroyPipelineLayout>;
using UniquePipelineCache = UniqueDestroyed<VkPipelineCache, &VolkDeviceTable::vkDestroyPipelineCache>;
using UniquePipeline = UniqueDestroyed<VkPipeline, &VolkDeviceTable::vkDestroyPipeline>;
// A primary command buffer, freed back to its pool. Declare it after the UniqueCommandPool it comes
// from so that it goes first: the validation layer (1.3.239) leaks a command buffer whose pool is
// destroyed before it is freed.
using UniqueCommandBuffer = Unique<VkCommandBuffer, FreeToPool>;

// Runs `create(&handle)` (a vkCreate* call, through the fault injector) and wraps what it made; a
// failure is checked through Device::check (which latches device loss) with `what` as its name.
template <typename UniqueT, typename Create>
Result<UniqueT> create_unique(Device& device, FaultInjector& faults, std::string_view what, Create&& create,
                              SourceLocation where = SourceLocation::current()) {
  decltype(std::declval<UniqueT>().get()) handle = VK_NULL_HANDLE;
  VkResult r = faults.run([&] { return create(&handle); });
  if (r != VK_SUCCESS) return device.check(r, what, where);
  return UniqueT({&device}, handle);
}

// One primary command buffer from `pool`.
inline Result<UniqueCommandBuffer> allocate_command_buffer(Device& device, FaultInjector& faults, VkCommandPool pool,
                                                           SourceLocation where = SourceLocation::current()) {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkResult r = faults.run([&] { return device.fn().vkAllocateCommandBuffers(device.handle(), &info, &cb); });
  if (r != VK_SUCCESS) return device.check(r, "vkAllocateCommandBuffers", where);
  return UniqueCommandBuffer({&device, pool}, cb);
}

}  // namespace rill::vk
