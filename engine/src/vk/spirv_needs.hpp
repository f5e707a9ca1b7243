// What a kernel's SPIR-V asks of the device beyond Vulkan 1.1's guarantees, read at pipeline
// creation with its specialization applied: optional capabilities, and the workgroup (shared)
// memory it declares. Checked against the device's capabilities, which a limit profile may have
// lowered, so that a kernel a smaller device could not run is refused by name on any machine.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "rill/device.hpp"
#include "rill/status.hpp"

namespace rill::vk {

struct ShaderNeeds {
  bool subgroup_arithmetic = false;  // GroupNonUniformArithmetic
  bool subgroup_shuffle = false;     // GroupNonUniformShuffle
  bool storage_16bit = false;        // 16-bit storage-buffer access
  bool float16 = false;              // 16-bit float arithmetic
  bool storage_8bit = false;
  bool int8 = false;
  bool cooperative_matrix = false;      // CooperativeMatrixNV (and the Vulkan memory model it comes with)
  bool rounding_rte = false;            // RoundingModeRTE (declared for f32: rill declares no other width)
  uint64_t workgroup_memory_bytes = 0;  // the Workgroup variables, tightly packed (vec3 as vec4)
};

// `spec_ids` and `spec_values` pair each specialization constant id with its value (32-bit bits).
Result<ShaderNeeds> shader_needs(std::span<const uint32_t> spirv, std::span<const uint32_t> spec_ids,
                                 std::span<const uint32_t> spec_values);

// Ok, or Unimplemented (as ops say what a device cannot run) naming the kernel and what it lacks.
Status check_shader_needs(const ShaderNeeds& needs, const DeviceInfo& device, std::string_view kernel);

}  // namespace rill::vk
