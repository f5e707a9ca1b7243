// The limit profiles of device.hpp: what a smaller class of device offers, applied as minimums.
#include <algorithm>
#include <array>
#include <cstdint>

#include "rill/device.hpp"

namespace rill {
namespace {

// A profile lowers the device's limits to its own and turns off what it lacks: a member left at its
// default keeps the device's value, so each profile names only what it takes away.
struct LimitProfile {
  const char* name;
  const char* description;
  uint32_t shared_memory_bytes = UINT32_MAX;
  uint32_t max_invocations = UINT32_MAX;
  std::array<uint32_t, 3> max_workgroup_size = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  std::array<uint32_t, 3> max_workgroup_count = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  uint64_t max_storage_buffer_range = UINT64_MAX;
  uint32_t max_push_constants_bytes = UINT32_MAX;
  uint64_t max_texel_buffer_elements = UINT64_MAX;
  bool subgroup_arithmetic = true, subgroup_size_control = true, storage_16bit = true, float16 = true;
  bool storage_8bit = true, int8 = true;
  bool cooperative_matrices = true;  // kept where the device has them
  bool unified_memory = true;        // kept where the device has it; false: the host maps no device memory
  bool rounding_rte = true;          // kept where the device has it (Vulkan 1.1 cannot declare the rounding)
};

// Phone classes share Vulkan's minimum workgroup counts and 128 MiB storage and texel bindings.
constexpr std::array<uint32_t, 3> kMinimumWorkgroupCount = {65535, 65535, 65535};
constexpr uint64_t k128MiB = uint64_t(1) << 27;

constexpr LimitProfile kProfiles[] = {
    {.name = "mali",
     .description = "Mali-class GPU: 16 KiB shared memory, 256 invocations, 128 MiB storage buffers, no subgroup "
                    "arithmetic",
     .shared_memory_bytes = 16384,
     .max_invocations = 256,
     .max_workgroup_size = {256, 256, 64},
     .max_workgroup_count = kMinimumWorkgroupCount,
     .max_storage_buffer_range = k128MiB,
     .max_push_constants_bytes = 128,
     .max_texel_buffer_elements = k128MiB,
     .subgroup_arithmetic = false,
     .subgroup_size_control = false,
     .cooperative_matrices = false},
    {.name = "adreno",
     .description = "Adreno-class GPU: 32 KiB shared memory, 1024 invocations, 128 MiB storage buffers",
     .shared_memory_bytes = 32768,
     .max_invocations = 1024,
     .max_workgroup_size = {1024, 1024, 64},
     .max_workgroup_count = kMinimumWorkgroupCount,
     .max_storage_buffer_range = k128MiB,
     .max_push_constants_bytes = 128,
     .max_texel_buffer_elements = k128MiB,
     .cooperative_matrices = false},
    {.name = "vulkan11-minimum",
     .description = "the limits Vulkan 1.1 guarantees: 16 KiB shared memory, 128 invocations, 128 MiB storage "
                    "buffers, 65,536-texel buffer views, no 16-bit storage, no subgroup arithmetic, no declared f32 "
                    "rounding, no device memory the host maps (uploads and downloads staged as on a discrete GPU; "
                    "descriptor counts stay the device's)",
     .shared_memory_bytes = 16384,
     .max_invocations = 128,
     .max_workgroup_size = {128, 128, 64},
     .max_workgroup_count = kMinimumWorkgroupCount,
     .max_storage_buffer_range = k128MiB,
     .max_push_constants_bytes = 128,
     .max_texel_buffer_elements = 65536,
     .subgroup_arithmetic = false,
     .subgroup_size_control = false,
     .storage_16bit = false,
     .float16 = false,
     .storage_8bit = false,
     .int8 = false,
     .cooperative_matrices = false,
     .unified_memory = false,
     .rounding_rte = false},
    // Not a class of device: every limit the device's own but the storage bindings, so that the
    // splitting of tensors too large for one binding (a model's embedding and output head) runs in
    // tests with small models on any machine.
    {.name = "small-bindings",
     .description = "the device's own limits but storage bindings of 64 KiB: tables larger than one binding split",
     .max_storage_buffer_range = uint64_t(1) << 16},
};

}  // namespace

std::vector<LimitProfileInfo> limit_profiles() {
  std::vector<LimitProfileInfo> out;
  for (const LimitProfile& p : kProfiles) out.push_back({p.name, p.description});
  return out;
}

Status apply_limit_profile(std::string_view name, DeviceInfo& device) {
  const LimitProfile* profile = nullptr;
  std::string known;
  for (const LimitProfile& p : kProfiles) {
    if (name == p.name) profile = &p;
    known += std::string(known.empty() ? "" : ", ") + p.name;
  }
  if (profile == nullptr)
    return invalid_argument("unknown limit profile '" + std::string(name) + "' (known: " + known + ")");
  DeviceCaps& c = device.caps;
  c.shared_memory_bytes = std::min(c.shared_memory_bytes, profile->shared_memory_bytes);
  c.max_workgroup_invocations = std::min(c.max_workgroup_invocations, profile->max_invocations);
  for (int d = 0; d < 3; ++d) {
    c.max_workgroup_size[d] = std::min({c.max_workgroup_size[d], profile->max_workgroup_size[d], c.max_workgroup_invocations});
    c.max_workgroup_count[d] = std::min(c.max_workgroup_count[d], profile->max_workgroup_count[d]);
  }
  c.max_storage_buffer_range = std::min(c.max_storage_buffer_range, profile->max_storage_buffer_range);
  c.max_push_constants_bytes = std::min(c.max_push_constants_bytes, profile->max_push_constants_bytes);
  c.max_texel_buffer_elements = std::min(c.max_texel_buffer_elements, profile->max_texel_buffer_elements);
  c.subgroup_arithmetic = c.subgroup_arithmetic && profile->subgroup_arithmetic;
  if (!profile->subgroup_size_control) {
    c.subgroup_size_control = false;
    c.min_subgroup_size = c.max_subgroup_size = c.subgroup_size;
  }
  c.storage_buffer_16bit = c.storage_buffer_16bit && profile->storage_16bit;
  c.float16_arithmetic = c.float16_arithmetic && profile->float16;
  c.storage_buffer_8bit = c.storage_buffer_8bit && profile->storage_8bit;
  c.int8_arithmetic = c.int8_arithmetic && profile->int8;
  if (!profile->cooperative_matrices) c.cooperative_matrix_f16 = {};  // no phone-class or minimum device has them
  c.unified_memory = c.unified_memory && profile->unified_memory;
  c.rounding_rte_f32 = c.rounding_rte_f32 && profile->rounding_rte;
  device.limit_profile = profile->name;
  return Status::ok();
}

}  // namespace rill
