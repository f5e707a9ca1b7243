// Physical devices: what each can do, and which one rill runs on.
#include "vk/device_select.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

#include "vk/instance.hpp"
#include "vk/quirks.hpp"

namespace rill::vk {
namespace {

DeviceType to_device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceType::kDiscreteGpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceType::kIntegratedGpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceType::kVirtualGpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceType::kCpu;
    default: return DeviceType::kOther;
  }
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// The cooperative-matrix shape rill's matmul can use: subgroup scope, f16 A and B, f32 C and D,
// 16 x 16 x 16 (preferred) or 16 x 8 x 16. The kernels also need the Vulkan memory model (glslang
// declares it with the extension) with device scope, and 16-bit floats in shared memory. Zeros: none.
std::array<uint32_t, 3> cooperative_matrix_f16_shape(VkPhysicalDevice device,
                                                     const std::vector<VkExtensionProperties>& exts, bool v12,
                                                     bool float16) {
  if (!float16 || !has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) ||
      vkGetPhysicalDeviceCooperativeMatrixPropertiesNV == nullptr)
    return {};
  if (!v12 && !has_extension(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)) return {};
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  features2.pNext = &coop;
  coop.pNext = &memory_model;
  vkGetPhysicalDeviceFeatures2(device, &features2);
  // Device scope too: enabling the memory model without it makes every atomic with the default
  // (device) scope invalid, which the NVIDIA driver's validation reported for rill's counters.
  if (!coop.cooperativeMatrix || !memory_model.vulkanMemoryModel || !memory_model.vulkanMemoryModelDeviceScope)
    return {};
  uint32_t count = 0;
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &count, shapes.data()) != VK_SUCCESS) return {};
  std::array<uint32_t, 3> best{};
  for (const auto& s : shapes) {
    const bool usable = s.scope == VK_SCOPE_SUBGROUP_NV && s.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                        s.BType == VK_COMPONENT_TYPE_FLOAT16_NV && s.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                        s.DType == VK_COMPONENT_TYPE_FLOAT32_NV && s.MSize == 16 && s.KSize == 16 &&
                        (s.NSize == 16 || s.NSize == 8);
    if (usable && s.NSize > best[1]) best = {s.MSize, s.NSize, s.KSize};
  }
  return best;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string device_list_text(const std::vector<PhysicalDevice>& devices) {
  std::string s;
  for (const auto& d : devices)
    s += (s.empty() ? "" : ", ") + std::to_string(d.info.index) + ": " + d.info.name;
  return s.empty() ? "none" : s;
}

Result<int> pick_by_name_or_index(const std::vector<PhysicalDevice>& devices, const std::string& spec,
                                  const std::string& source, std::string& reason) {
  // Digits alone are an index (strtol would also take " 0" and "+0"); anything else is a name.
  long index = 0;
  const auto [end, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), index);
  if (!spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos && ec == std::errc() &&
      end == spec.data() + spec.size()) {
    for (size_t i = 0; i < devices.size(); ++i) {
      if (static_cast<long>(devices[i].info.index) != index) continue;
      if (!devices[i].info.usable)
        return unavailable(source + " picks device " + spec + " (" + devices[i].info.name +
                           "), which rill cannot use: " + devices[i].info.unusable_reason);
      reason = source + " picked device index " + spec;
      return static_cast<int>(i);
    }
    return not_found(source + " asks for device index " + spec + "; devices are: " + device_list_text(devices));
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (lower(devices[i].info.name).find(lower(spec)) == std::string::npos) continue;
    if (!devices[i].info.usable) continue;
    reason = source + " matched \"" + spec + "\" to " + devices[i].info.name;
    return static_cast<int>(i);
  }
  return not_found(source + " asks for a device named like \"" + spec +
                   "\"; usable devices are: " + device_list_text(devices));
}

}  // namespace

PhysicalDevice describe_physical_device(VkPhysicalDevice device, uint32_t index, uint32_t instance_api) {
  PhysicalDevice pd;
  pd.handle = device;
  DeviceInfo& info = pd.info;
  DeviceCaps& caps = info.caps;
  info.index = index;

  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(device, &props);
  info.name = props.deviceName;
  info.type = to_device_type(props.deviceType);
  info.vendor_id = props.vendorID;
  info.device_id = props.deviceID;
  info.driver_version = props.driverVersion;
  std::memcpy(pd.pipeline_cache_uuid.data(), props.pipelineCacheUUID, VK_UUID_SIZE);
  caps.api_version = std::min(props.apiVersion, instance_api);

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &ext_count, exts.data());

  const bool v12 = caps.api_version >= VK_API_VERSION_1_2;
  const bool v13 = caps.api_version >= VK_API_VERSION_1_3;
  if (caps.api_version < VK_API_VERSION_1_1) {
    info.usable = false;
    info.unusable_reason = "supports only Vulkan 1.0; rill needs 1.1";
    return pd;
  }

  // Properties: core 1.1 subgroups, plus driver and subgroup-size-control where available.
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  props2.pNext = &subgroup;
  subgroup.pNext = &maint3;
  const bool has_driver = v12 || has_extension(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  const bool has_size_control = v13 || has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  void** tail = &maint3.pNext;
  if (has_driver) {
    *tail = &driver;
    tail = &driver.pNext;
  }
  VkPhysicalDeviceFloatControlsProperties float_controls{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  const bool has_float_controls = v12 || has_extension(exts, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  if (has_float_controls) {
    *tail = &float_controls;
    tail = &float_controls.pNext;
  }
  if (has_size_control) *tail = &size_control;
  vkGetPhysicalDeviceProperties2(device, &props2);
  caps.rounding_rte_f32 = has_float_controls && float_controls.shaderRoundingModeRTEFloat32;

  if (has_driver) {
    info.driver_id = driver.driverID;
    info.driver_name = driver.driverName;
    info.driver_info = driver.driverInfo;
  }
  caps.subgroup_size = subgroup.subgroupSize;
  caps.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  caps.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  caps.min_subgroup_size = has_size_control ? size_control.minSubgroupSize : subgroup.subgroupSize;
  caps.max_subgroup_size = has_size_control ? size_control.maxSubgroupSize : subgroup.subgroupSize;

  // Features.
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures size_control_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  features2.pNext = &storage16;
  void** ftail = &storage16.pNext;
  const bool has_8bit = v12 || has_extension(exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  const bool has_f16i8 = v12 || has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (has_8bit) {
    *ftail = &storage8;
    ftail = &storage8.pNext;
  }
  if (has_f16i8) {
    *ftail = &f16i8;
    ftail = &f16i8.pNext;
  }
  const bool has_executable_properties = has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (has_executable_properties) {
    *ftail = &executable_features;
    ftail = &executable_features.pNext;
  }
  if (has_size_control) *ftail = &size_control_features;
  vkGetPhysicalDeviceFeatures2(device, &features2);
  caps.pipeline_statistics = has_executable_properties && executable_features.pipelineExecutableInfo;
  caps.storage_buffer_16bit = storage16.storageBuffer16BitAccess;
  caps.storage_buffer_8bit = has_8bit && storage8.storageBuffer8BitAccess;
  caps.float16_arithmetic = has_f16i8 && f16i8.shaderFloat16;
  caps.int8_arithmetic = has_f16i8 && f16i8.shaderInt8;
  caps.subgroup_size_control = has_size_control && size_control_features.subgroupSizeControl &&
                               size_control_features.computeFullSubgroups;
  caps.cooperative_matrix_f16 = cooperative_matrix_f16_shape(device, exts, v12, caps.float16_arithmetic);

  const VkPhysicalDeviceLimits& limits = props.limits;
  caps.shared_memory_bytes = limits.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i) {
    caps.max_workgroup_size[i] = limits.maxComputeWorkGroupSize[i];
    caps.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
  }
  caps.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  caps.max_storage_buffer_range = limits.maxStorageBufferRange;
  caps.max_allocation_bytes = maint3.maxMemoryAllocationSize;
  caps.max_push_constants_bytes = limits.maxPushConstantsSize;
  caps.max_storage_buffers_per_stage = limits.maxPerStageDescriptorStorageBuffers;
  caps.min_storage_buffer_offset_alignment = limits.minStorageBufferOffsetAlignment;
  caps.max_texel_buffer_elements = limits.maxTexelBufferElements;
  caps.min_texel_buffer_offset_alignment = limits.minTexelBufferOffsetAlignment;
  caps.max_sampled_images_per_stage = limits.maxPerStageDescriptorSampledImages;
  auto texel_buffer_format = [&](VkFormat format) {
    VkFormatProperties fp{};
    vkGetPhysicalDeviceFormatProperties(device, format, &fp);
    return (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  };
  caps.texel_buffer_f32x4 = texel_buffer_format(VK_FORMAT_R32G32B32A32_SFLOAT);
  caps.texel_buffer_f16x4 = texel_buffer_format(VK_FORMAT_R16G16B16A16_SFLOAT);
  caps.texel_buffer_u32x4 = texel_buffer_format(VK_FORMAT_R32G32B32A32_UINT);
  caps.timestamp_period_ns = limits.timestampPeriod;
  caps.pipeline_creation_feedback = v13 || has_extension(exts, VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);

  // Queue: the first family with compute; prefer one with timestamps.
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, families.data());
  int chosen = -1;
  for (uint32_t i = 0; i < family_count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (chosen < 0 || (families[i].timestampValidBits > 0 && families[uint32_t(chosen)].timestampValidBits == 0))
      chosen = static_cast<int>(i);
  }
  if (chosen < 0) {
    info.usable = false;
    info.unusable_reason = "no queue family supports compute";
  } else {
    pd.compute_queue_family = static_cast<uint32_t>(chosen);
    caps.timestamp_valid_bits = families[uint32_t(chosen)].timestampValidBits;
    caps.timestamps = caps.timestamp_valid_bits > 0 && caps.timestamp_period_ns > 0.0;
  }

  // Memory: the largest device-local heap; unified when it is host-visible on a device that shares
  // system memory (integrated GPUs and CPU drivers).
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(device, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      caps.device_local_bytes = std::max<uint64_t>(caps.device_local_bytes, mem.memoryHeaps[h].size);
  const VkMemoryPropertyFlags unified_flags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                              VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool shares_memory = info.type == DeviceType::kIntegratedGpu || info.type == DeviceType::kCpu;
  for (uint32_t t = 0; t < mem.memoryTypeCount && shares_memory; ++t)
    if ((mem.memoryTypes[t].propertyFlags & unified_flags) == unified_flags &&
        (mem.memoryTypes[t].propertyFlags & kMemoryNeedingFeatures) == 0)
      caps.unified_memory = true;

  for (const Quirk* q : quirks_for(info)) info.quirks.emplace_back(q->name);
  if (quirk_flags_for(info).no_16bit_storage) caps.storage_buffer_16bit = caps.float16_arithmetic = false;
  if (!caps.float16_arithmetic) caps.cooperative_matrix_f16 = {};
  return pd;
}

Result<std::vector<PhysicalDevice>> enumerate_physical_devices(VkInstance instance, uint32_t instance_api) {
  uint32_t count = 0;
  RILL_VK_RETURN_IF_ERROR(vkEnumeratePhysicalDevices(instance, &count, nullptr));
  std::vector<VkPhysicalDevice> handles(count);
  VkResult r = vkEnumeratePhysicalDevices(instance, &count, handles.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return status_from_result(r, "vkEnumeratePhysicalDevices");
  handles.resize(count);
  std::vector<PhysicalDevice> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(describe_physical_device(handles[i], i, instance_api));
  return out;
}

Result<int> choose_device(const std::vector<PhysicalDevice>& devices, const DeviceSelector& selector,
                          std::string& reason) {
  if (devices.empty())
    return unavailable("no Vulkan device found; install a driver (for a CPU fallback on Debian: "
                       "mesa-vulkan-drivers, which provides lavapipe)");
  if (selector.index >= 0) return pick_by_name_or_index(devices, std::to_string(selector.index), "the option device.index", reason);
  if (!selector.name.empty()) return pick_by_name_or_index(devices, selector.name, "the option device.name", reason);
  if (selector.use_environment) {
    const char* env = std::getenv("RILL_DEVICE");
    if (env != nullptr && *env != '\0') return pick_by_name_or_index(devices, env, "RILL_DEVICE", reason);
  }
  // Rank: discrete, integrated, virtual, CPU, other; then the larger device-local heap.
  int best = -1;
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i].info;
    if (!d.usable) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const DeviceInfo& b = devices[size_t(best)].info;
    if (d.type < b.type || (d.type == b.type && d.caps.device_local_bytes > b.caps.device_local_bytes))
      best = static_cast<int>(i);
  }
  if (best < 0) return unavailable("no usable Vulkan device: " + device_list_text(devices));
  const DeviceInfo& chosen = devices[size_t(best)].info;
  reason = std::string("highest ranked usable device (") + device_type_name(chosen.type) +
           "; order: discrete GPU, integrated GPU, virtual GPU, CPU)";
  return best;
}

}  // namespace rill::vk
