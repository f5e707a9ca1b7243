// The per-device quirks table: driver behaviours rill works around or tunes for, keyed by vendor,
// device and driver (ncnn-style). Each entry says why it exists.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rill/device.hpp"

namespace rill::vk {

struct QuirkFlags {
  // A CPU driver (lavapipe, SwiftShader): every subgroup runs at the width it reports.
  bool cpu_driver = false;
  // A CPU driver with subgroup shuffles (which the "cpu" kernels use): barriers and shared memory
  // are expensive, wide register tiles are cheap, so kernels prefer their "cpu" variants.
  bool prefer_cpu_kernels = false;
  // The driver's watchdog kills long dispatches and reports VK_ERROR_DEVICE_LOST; long serial
  // work must be split into dispatches of bounded length.
  bool short_dispatches = false;
  // Total loop iterations one shader invocation may run before the driver silently ends its loops
  // (0: no limit). Ops bound the serial work per invocation below it, or refuse the shape.
  uint32_t max_loop_iterations = 0;
  // The driver's shader compiler fails on 16-bit storage (it aborts the process): rill reports
  // the device without 16-bit storage, so f16 kernels are refused and models run in f32.
  bool no_16bit_storage = false;
};

// A range of driver versions, inclusive, as driver_version_of gives them: Mesa's own version for
// Mesa drivers (lavapipe reports driverVersion 1, so it is read from the driver's info string),
// else VkPhysicalDeviceProperties::driverVersion in the vendor's encoding. A range is meaningful
// only with a driver_id or vendor_id.
struct DriverVersions {
  uint32_t first = 0;          // the first version known to have the behaviour
  uint32_t last = UINT32_MAX;  // the last; UINT32_MAX while no fixed version is known
  bool contains(uint32_t version) const { return version >= first && version <= last; }
};

// Mesa major.minor.patch packed as VK_MAKE_VERSION packs it.
constexpr uint32_t mesa_version(uint32_t major, uint32_t minor, uint32_t patch) {
  return (major << 22) | (minor << 12) | patch;
}

// The version a quirk's DriverVersions is compared with (see there).
uint32_t driver_version_of(const DeviceInfo& info);

struct Quirk {
  std::string_view name;
  uint32_t vendor_id = 0;  // 0: any
  uint32_t driver_id = 0;  // VkDriverId, 0: any
  DriverVersions driver_versions;
  bool cpu_device_only = false;
  QuirkFlags flags;
  std::string_view why;
  bool (*applies)(const DeviceInfo&) = nullptr;  // a further condition (compiler version, host), or none
};

// The LLVM major version in a Mesa driver_info string ("Mesa 22.3.6 (LLVM 15.0.6)"), 0 if absent.
uint32_t llvm_major_version(std::string_view driver_info);

// The entries that match `info`, and their flags merged.
std::vector<const Quirk*> quirks_for(const DeviceInfo& info);
QuirkFlags quirk_flags_for(const DeviceInfo& info);

}  // namespace rill::vk
