// The limit profiles of device.hpp: what a smaller class of device offers, applied as minimums.
#include <algorithm>
#include <array>
#include <cstdint>

#include "rill/device.hpp"

namespace rill {
namespace {

struct LimitProfile {
  const char* name;
  const char* description;
  uint32_t shared_memory_bytes;
  uint32_t max_invocations;
  std::array<uint32_t, 3> max_workgroup_size;
  std::array<uint32_t, 3> max_workgroup_count;
  uint64_t max_storage_buffer_range;
  uint32_t max_push_constants_bytes;
  uint64_t max_texel_buffer_elements;
  bool subgroup_arithmetic, subgroup_size_control, storage_16bit, float16, storage_8bit, int8;
  bool cooperative_matrices;  // kept where the device has them
  bool unified_memory;        // kept where the device has it; false: the host maps no device memory
  bool rounding_rte;          // kept where the device has it (Vulkan 1.1 cannot declare the rounding)
};

constexpr LimitProfile kProfiles[] = {
    {"mali",
     "Mali-class GPU: 16 KiB shared memory, 256 invocations, 128 MiB storage buffers, no subgroup arithmetic",
     16384,
     256,
     {256, 256, 64},
     {65535, 65535, 65535},
     uint64_t(1) << 27,
     128,
     uint64_t(1) << 27,
     false,
     false,
     true,
     true,
     true,
     true,
     false,
     true,
     true},
    {"adreno",
     "Adreno-class GPU: 32 KiB shared memory, 1024 invocations, 128 MiB storage buffers",
     32768,
     1024,
     {1024, 1024, 64},
     {65535, 65535, 65535},
     uint64_t(1) << 27,
     128,
     uint64_t(1) << 27,
     true,
     true,
     true,
     true,
     true,
     true,
     false,
     true,
     true},
    {"vulkan11-minimum",
     "the limits Vulkan 1.1 guarantees: 16 KiB shared memory, 128 invocations, 128 MiB storage buffers, "
     "65,536-texel buffer views, no 16-bit storage, no subgroup arithmetic, no declared f32 rounding, no device memory "
     "the host "
     "maps (uploads and downloads staged as on a discrete GPU; descriptor counts stay the device's)",
     16384,
     128,
     {128, 128, 64},
     {65535, 65535, 65535},
     uint64_t(1) << 27,
     128,
     65536,
     false,
     false,
     false,
     false,
     false,
     false,
     false,
     false,
     false},
    // Not a class of device: every limit the device's own but the storage bindings, so that the
    // splitting of tensors too large for one binding (a model's embedding and output head) runs in
    // tests with small models on any machine.
    {"small-bindings",
     "the device's own limits but storage bindings of 64 KiB: tables larger than one binding split",
     UINT32_MAX,
     UINT32_MAX,
     {UINT32_MAX, UINT32_MAX, UINT32_MAX},
     {UINT32_MAX, UINT32_MAX, UINT32_MAX},
     uint64_t(1) << 16,
     UINT32_MAX,
     UINT64_MAX,
     true,
     true,
     true,
     true,
     true,
     true,
     true,
     true,
     true},
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
