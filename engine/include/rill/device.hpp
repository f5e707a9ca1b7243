// What rill knows about a Vulkan device: identity, capabilities and the quirks that apply to it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rill/export.hpp"
#include "rill/status.hpp"

namespace rill {

// Ranked in this order when rill picks a device by itself.
enum class DeviceType { kDiscreteGpu, kIntegratedGpu, kVirtualGpu, kCpu, kOther };
RILL_API const char* device_type_name(DeviceType type);

struct DeviceCaps {
  uint32_t api_version = 0;  // VK_MAKE_API_VERSION encoded
  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0;  // equal to subgroup_size without subgroup size control
  uint32_t max_subgroup_size = 0;
  bool subgroup_size_control = false;
  bool subgroup_arithmetic = false;  // subgroupAdd & co. in compute shaders
  bool subgroup_shuffle = false;     // subgroupShuffle(Xor) in compute shaders (the CPU-family kernels')
  bool storage_buffer_16bit = false;  // f16 tensors can be bound
  bool float16_arithmetic = false;
  bool storage_buffer_8bit = false;
  bool int8_arithmetic = false;
  // A shader may declare that its f32 + - * round to nearest even (shaderRoundingModeRTEFloat32);
  // Vulkan leaves the rounding to the driver otherwise. The ICL sampler's bit-for-bit guarantee.
  bool rounding_rte_f32 = false;
  // Cooperative matrices (VK_NV_cooperative_matrix): the subgroup-scope M x N x K shape of an f16
  // product with f32 accumulation that rill's matmul uses, {16, 16, 16} or {16, 8, 16}; zeros: none.
  std::array<uint32_t, 3> cooperative_matrix_f16{};
  uint32_t shared_memory_bytes = 0;
  bool unified_memory = false;  // device-local memory is host-visible and mapped directly
  bool timestamps = false;      // compute queue supports timestamp queries
  double timestamp_period_ns = 0.0;
  uint32_t timestamp_valid_bits = 0;
  bool pipeline_creation_feedback = false;
  bool pipeline_statistics = false;  // the driver reports compiler statistics (VK_KHR_pipeline_executable_properties)
  bool debug_utils = false;
  std::array<uint32_t, 3> max_workgroup_size{};
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_allocation_bytes = 0;
  uint32_t max_push_constants_bytes = 0;
  uint32_t max_storage_buffers_per_stage = 0;  // storage-buffer bindings one kernel may use
  uint64_t min_storage_buffer_offset_alignment = 0;
  // Uniform texel buffers (kernels that read a tensor with texelFetch, 4 elements per texel): the
  // most texels one view holds, the offset alignment of a view, and how many one kernel may bind
  // (maxPerStageDescriptorSampledImages); f32x4 / f16x4 / u32x4: the formats can back them (0 / false:
  // none; u32x4 reads the words of packed weights).
  uint64_t max_texel_buffer_elements = 0;
  uint64_t min_texel_buffer_offset_alignment = 0;
  uint32_t max_sampled_images_per_stage = 0;
  bool texel_buffer_f32x4 = false;
  bool texel_buffer_f16x4 = false;
  bool texel_buffer_u32x4 = false;
  uint64_t device_local_bytes = 0;  // size of the largest device-local heap

  bool operator==(const DeviceCaps&) const = default;
};

struct DeviceInfo {
  uint32_t index = 0;  // position in vkEnumeratePhysicalDevices
  std::string name;
  DeviceType type = DeviceType::kOther;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_id = 0;  // VkDriverId, 0 when unknown
  std::string driver_name;
  std::string driver_info;
  uint32_t driver_version = 0;
  DeviceCaps caps;
  std::vector<std::string> quirks;  // names of the quirks-table entries that apply
  bool usable = true;               // false: rill cannot run on it (see unusable_reason)
  std::string unusable_reason;
  std::string limit_profile;  // the limit profile applied to caps (see below); empty: none
};

// Limit profiles: run as a smaller class of device would, on any device. A profile lowers `caps`
// to its limits (shared memory, workgroup sizes and counts, storage-buffer range, push constants)
// and removes the features it lacks (subgroup arithmetic or size control, 16- and 8-bit storage and
// arithmetic); the engine then picks kernels within them, and a kernel that asks for more is
// refused by name. It never raises a limit, and the subgroup size stays the device's own, as do
// subgroup shuffles (only the CPU-family kernels use them; without them a CPU driver runs the GPU
// family).
//   "mali"             Mali-class: 16 KiB shared memory, 256 invocations, 128 MiB storage buffers,
//                      no subgroup arithmetic
//   "adreno"           Adreno-class: 32 KiB shared memory, 1024 invocations, 128 MiB storage buffers
//   "vulkan11-minimum" the limits Vulkan 1.1 guarantees: 16 KiB shared memory, 128 invocations,
//                      128 MiB storage buffers, 128-byte push constants, 65,536-texel buffer
//                      views, no 16-bit storage, no subgroup arithmetic
struct LimitProfileInfo {
  std::string name, description;
};
RILL_API std::vector<LimitProfileInfo> limit_profiles();
// Applies the profile `name` to `device` (InvalidArgument naming the known ones if there is none).
RILL_API Status apply_limit_profile(std::string_view name, DeviceInfo& device);

// Which device to use. An explicit index or name here wins over the RILL_DEVICE environment
// variable, which wins over rill's own ranking (discrete, integrated, virtual, CPU).
struct DeviceSelector {
  int index = -1;           // -1: not set
  std::string name;         // case-insensitive substring of the device name; empty: not set
  bool use_environment = true;  // read RILL_DEVICE (an index or a name substring)
};

struct DeviceListing {
  std::vector<DeviceInfo> devices;
  int chosen = -1;     // index into devices
  std::string reason;  // why that one, in words
};

// Enumerates the devices of a fresh instance and says which one `selector` would pick.
RILL_API Result<DeviceListing> list_devices(const DeviceSelector& selector = {});

// How rill would run its main kernels on `device`: the kernel plan of each op at a representative
// shape (kernel family, algorithm, workgroup and tile sizes), for `rill info` and bug reports.
// `family` forces "cpu" or "gpu" kernels as ContextOptions::kernel_variant does; empty: the
// device's own choice. Another family gives no lines here, InvalidArgument from the overloads below.
struct KernelPlanLine {
  std::string op, shape, plan;
};
RILL_API std::vector<KernelPlanLine> describe_kernel_plans(const DeviceInfo& device, std::string_view family = {});
// The same under forced choices, written as ContextOptions::kernel_plan takes them ("la_tile=4,
// matmul_texel=off"): InvalidArgument, naming the key or value, where a context would refuse them.
RILL_API Result<std::vector<KernelPlanLine>> describe_kernel_plans(const DeviceInfo& device, std::string_view family,
                                                                   std::string_view kernel_plan);
// The same with a tuning file's plan (TuningFile::kernel_plan, made on this device and family) under
// the forced choices, as a context given that file plans: each tuned choice taken where it fits.
RILL_API Result<std::vector<KernelPlanLine>> describe_kernel_plans(const DeviceInfo& device, std::string_view family,
                                                                   std::string_view kernel_plan,
                                                                   std::string_view tuned_plan);

// The choices ContextOptions::kernel_plan (and RILL_KERNEL_PLAN) can force, for `rill info
// --plan-keys` and apps that expose them: each key, the values it takes, what it chooses, and
// whether a tuning file written by `rill tune` may hold it.
struct KernelPlanKey {
  std::string key, values, chooses;
  bool tunable = false;
};
RILL_API std::vector<KernelPlanKey> kernel_plan_keys();

}  // namespace rill
