// Logical device creation with the optional features rill uses, and the device-lost latch.
#include "vk/device.hpp"

#include <vector>

namespace rill::vk {

Result<std::unique_ptr<Device>> Device::create(const PhysicalDevice& physical) {
  if (!physical.info.usable)
    return unavailable("device " + physical.info.name + " is not usable: " + physical.info.unusable_reason);
  const DeviceCaps& caps = physical.info.caps;
  std::unique_ptr<Device> dev(new Device());
  dev->physical_ = physical;
  dev->queue_family_ = physical.compute_queue_family;

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(physical.handle, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> available(ext_count);
  vkEnumerateDeviceExtensionProperties(physical.handle, nullptr, &ext_count, available.data());
  auto has = [&](const char* name) {
    for (const auto& e : available)
      if (std::string_view(e.extensionName) == name) return true;
    return false;
  };
  const bool v12 = caps.api_version >= VK_API_VERSION_1_2;
  const bool v13 = caps.api_version >= VK_API_VERSION_1_3;
  std::vector<const char*> extensions;
  if (!v12 && has(VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (!v12 && has(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (!v13 && has(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME))
    extensions.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
  if (!v13 && caps.subgroup_size_control) extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  if (!v12 && caps.rounding_rte_f32) extensions.push_back(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  const bool cooperative_matrix = caps.cooperative_matrix_f16[0] != 0;
  if (cooperative_matrix) {
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (!v12) extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  }
  if (caps.pipeline_statistics) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  // Portability drivers (MoltenVK) require their subset extension to be enabled.
  if (has("VK_KHR_portability_subset")) extensions.push_back("VK_KHR_portability_subset");

  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  storage16.storageBuffer16BitAccess = caps.storage_buffer_16bit;
  storage8.storageBuffer8BitAccess = caps.storage_buffer_8bit;
  f16i8.shaderFloat16 = caps.float16_arithmetic;
  f16i8.shaderInt8 = caps.int8_arithmetic;
  size_control.subgroupSizeControl = caps.subgroup_size_control;
  size_control.computeFullSubgroups = caps.subgroup_size_control;
  features2.pNext = &storage16;
  void** tail = &storage16.pNext;
  if (caps.storage_buffer_8bit) {
    *tail = &storage8;
    tail = &storage8.pNext;
  }
  if (caps.float16_arithmetic || caps.int8_arithmetic) {
    *tail = &f16i8;
    tail = &f16i8.pNext;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  coop.cooperativeMatrix = VK_TRUE;
  memory_model.vulkanMemoryModel = VK_TRUE;  // glslang declares it in every cooperative-matrix kernel
  memory_model.vulkanMemoryModelDeviceScope = VK_TRUE;  // atomics default to device scope
  if (cooperative_matrix) {
    *tail = &coop;
    coop.pNext = &memory_model;
    tail = &memory_model.pNext;
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  executable.pipelineExecutableInfo = VK_TRUE;  // compiler statistics, read only when asked for
  if (caps.pipeline_statistics) {
    *tail = &executable;
    tail = &executable.pNext;
  }
  if (caps.subgroup_size_control) *tail = &size_control;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = dev->queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;

  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &features2;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  RILL_VK_RETURN_IF_ERROR(vkCreateDevice(physical.handle, &info, nullptr, &dev->device_));
  dev->owned_ = true;
  dev->load();
  dev->table_.vkGetDeviceQueue(dev->device_, dev->queue_family_, 0, &dev->queue_);
  return dev;
}

Result<std::unique_ptr<Device>> Device::wrap(const PhysicalDevice& physical, VkDevice device,
                                             VkQueue queue, uint32_t queue_family) {
  if (device == VK_NULL_HANDLE || queue == VK_NULL_HANDLE)
    return invalid_argument("external VkDevice and VkQueue must not be null");
  // The application's queue family: one that exists and computes; its timestamps are what the
  // family rill would have chosen had (none where it has none).
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical.handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical.handle, &family_count, families.data());
  if (queue_family >= family_count)
    return invalid_argument("external queue family " + std::to_string(queue_family) +
                            " does not exist (the device has " + std::to_string(family_count) + ")");
  if (!(families[queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    return invalid_argument("external queue family " + std::to_string(queue_family) + " does not support compute");
  // What rill would not choose on its own (a Vulkan 1.0 instance or device) it cannot run either.
  if (!physical.info.usable)
    return unavailable("the application's device " + physical.info.name + " " + physical.info.unusable_reason +
                       " (ExternalVulkan::api_version is the version the application's instance was made with)");
  std::unique_ptr<Device> dev(new Device());
  dev->physical_ = physical;
  dev->physical_.compute_queue_family = queue_family;
  DeviceCaps& caps = dev->physical_.info.caps;
  caps.timestamp_valid_bits = families[queue_family].timestampValidBits;
  caps.timestamps = caps.timestamp_valid_bits > 0 && caps.timestamp_period_ns > 0.0;
  dev->device_ = device;
  dev->queue_ = queue;
  dev->queue_family_ = queue_family;
  dev->owned_ = false;
  // rill cannot tell which optional features and extensions the application enabled on its
  // device: it assumes 16-bit storage (ExternalVulkan says so) and what the device's version makes
  // core without a feature bit; the rest stays off (its SPIR-V would be undefined there).
  const bool v12 = caps.api_version >= VK_API_VERSION_1_2, v13 = caps.api_version >= VK_API_VERSION_1_3;
  caps.cooperative_matrix_f16 = {};
  caps.pipeline_statistics = false;
  caps.float16_arithmetic = caps.int8_arithmetic = caps.storage_buffer_8bit = false;
  caps.subgroup_size_control = false;
  caps.min_subgroup_size = caps.max_subgroup_size = caps.subgroup_size;
  caps.pipeline_creation_feedback = caps.pipeline_creation_feedback && v13;
  caps.rounding_rte_f32 = caps.rounding_rte_f32 && v12;
  dev->load();
  return dev;
}

void Device::load() {
  volkLoadDeviceTable(&table_, device_);
  vkGetPhysicalDeviceMemoryProperties(physical_.handle, &memory_);
  quirks_ = quirk_flags_for(physical_.info);
}

Device::~Device() {
  if (owned_ && device_ != VK_NULL_HANDLE) table_.vkDestroyDevice(device_, nullptr);
}

Status Device::check(VkResult result, std::string_view what, SourceLocation where) {
  if (result == VK_ERROR_DEVICE_LOST && !lost_) {
    lost_ = true;
    lost_at_ = std::string(what);
  }
  return status_from_result(result, what, where);
}

Status Device::lost_status() const {
  return Status(StatusCode::kDeviceLost,
                "the device was lost earlier (at " + lost_at_ + "); create a new context");
}

}  // namespace rill::vk
