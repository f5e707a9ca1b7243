// Shared include for the Vulkan layer: volk (no link-time libvulkan) and VkResult -> Status.
#pragma once

#include <volk.h>

#include <string_view>

#include "rill/status.hpp"

namespace rill::vk {

// Name of a VkResult, e.g. "VK_ERROR_OUT_OF_DEVICE_MEMORY".
const char* result_name(VkResult result);

// The one mapping from VkResult to Status. `what` names the call that failed.
Status status_from_result(VkResult result, std::string_view what, SourceLocation where = SourceLocation::current());

// Memory types that need a feature rill does not enable (protected memory, AMD's device-coherent
// memory): allocating one would be invalid, so rill never chooses nor counts them.
inline constexpr VkMemoryPropertyFlags kMemoryNeedingFeatures = VK_MEMORY_PROPERTY_PROTECTED_BIT |
                                                                VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD |
                                                                VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD;

}  // namespace rill::vk

// Returns a Status from the enclosing function when a Vulkan call fails.
#define RILL_VK_RETURN_IF_ERROR(call)                                          \
  do {                                                                         \
    VkResult rill_vk_result_ = (call);                                         \
    if (rill_vk_result_ != VK_SUCCESS)                                         \
      return ::rill::vk::status_from_result(rill_vk_result_, #call);           \
  } while (0)
