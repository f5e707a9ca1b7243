// The logical device rill records into: its function table (volk, per device), its compute
// queue, and the sticky device-lost state.
#pragma once

#include <memory>
#include <string>

#include "vk/device_select.hpp"
#include "vk/quirks.hpp"
#include "vk/vk_common.hpp"

namespace rill::vk {

class Device {
 public:
  // Creates a VkDevice on `physical` with every feature rill can use that the device has.
  static Result<std::unique_ptr<Device>> create(const PhysicalDevice& physical);
  // Wraps an application-owned device; rill will not destroy it.
  static Result<std::unique_ptr<Device>> wrap(const PhysicalDevice& physical, VkDevice device,
                                              VkQueue queue, uint32_t queue_family);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_.handle; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceInfo& info() const { return physical_.info; }
  const std::array<uint8_t, VK_UUID_SIZE>& pipeline_cache_uuid() const { return physical_.pipeline_cache_uuid; }
  const QuirkFlags& quirks() const { return quirks_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }
  const VolkDeviceTable& fn() const { return table_; }

  // Maps a VkResult to a Status and latches device loss: once lost, every later check fails.
  Status check(VkResult result, std::string_view what, SourceLocation where = SourceLocation::current());
  bool lost() const { return lost_; }
  Status lost_status() const;

 private:
  Device() = default;
  void load();

  PhysicalDevice physical_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  bool owned_ = false;
  bool lost_ = false;
  std::string lost_at_;
  QuirkFlags quirks_;
  VkPhysicalDeviceMemoryProperties memory_{};
  VolkDeviceTable table_{};
};

}  // namespace rill::vk

// Checks a device call through Device::check (latching device loss) and returns on failure.
#define RILL_DEVICE_RETURN_IF_ERROR(device, call)                                   \
  do {                                                                              \
    VkResult rill_vk_result_ = (call);                                              \
    if (rill_vk_result_ != VK_SUCCESS) return (device).check(rill_vk_result_, #call); \
  } while (0)
