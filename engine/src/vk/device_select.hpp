// Physical-device description and selection.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "rill/device.hpp"
#include "vk/vk_common.hpp"

namespace rill::vk {

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  DeviceInfo info;
  uint32_t compute_queue_family = 0;
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};  // VkPhysicalDeviceProperties's
};

// Everything rill records about one physical device (capabilities, quirks, usability).
PhysicalDevice describe_physical_device(VkPhysicalDevice device, uint32_t index, uint32_t instance_api);

Result<std::vector<PhysicalDevice>> enumerate_physical_devices(VkInstance instance, uint32_t instance_api);

// Applies the selector (explicit, then RILL_DEVICE, then ranking) and explains the choice.
Result<int> choose_device(const std::vector<PhysicalDevice>& devices, const DeviceSelector& selector,
                          std::string& reason);

}  // namespace rill::vk
