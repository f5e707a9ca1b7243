// Quirks table. Add an entry with the vendor/driver it applies to and the reason; never a silent
// special case elsewhere in the engine.
#include "vk/quirks.hpp"

#include <algorithm>

#include "vk/vk_common.hpp"

namespace rill::vk {
namespace {

constexpr uint32_t kVendorArm = 0x13B5;       // Mali
constexpr uint32_t kVendorQualcomm = 0x5143;  // Adreno
constexpr uint32_t kVendorImgTec = 0x1010;    // PowerVR

constexpr uint32_t kDriverLlvmpipe = 13;   // VK_DRIVER_ID_MESA_LLVMPIPE

// lavapipe runs shaders on the host CPU, so the host's architecture is the device's.
bool arm64_llvm15_or_older(const DeviceInfo& info) {
#if defined(__aarch64__)
  const uint32_t llvm = llvm_major_version(info.driver_info);
  return llvm != 0 && llvm <= 15;
#else
  (void)info;
  return false;
#endif
}

// Entries name what they match with designated fields; everything unnamed matches any device.
const Quirk kQuirks[] = {
    {.name = "lavapipe-loop-limit",
     .driver_id = kDriverLlvmpipe,
     .driver_versions = {.first = 0, .last = UINT32_MAX},  // seen on 22.3; no version known without it
     .flags = {.max_loop_iterations = 65535},
     .why = "Mesa's gallivm (lavapipe) ends every loop of an invocation after 65535 iterations in total, "
            "silently: seen on Mesa 22.3 as outputs never written past that point"},
    {.name = "lavapipe-arm64-f16",
     .driver_id = kDriverLlvmpipe,
     .flags = {.no_16bit_storage = true},
     .why = "LLVM 15's AArch64 back end cannot select the f16-to-f32 vector conversion of 16-bit storage "
            "loads (LLVM ERROR: Cannot select: v4f32 = fp_extend ... v4i16), which aborts the process: seen "
            "with Debian 12's Mesa 22.3 on arm64 for every f16 kernel",
     .applies = &arm64_llvm15_or_older},
    {.name = "cpu-driver",
     .cpu_device_only = true,
     .flags = {.cpu_driver = true, .prefer_cpu_kernels = true},
     .why = "CPU implementation of Vulkan: barriers and shared memory cost far more than registers (the cpu "
            "kernels, where the driver has subgroup shuffles)"},
    {.name = "mobile-watchdog-arm",
     .vendor_id = kVendorArm,
     .flags = {.short_dispatches = true},
     .why = "Mali drivers reset the GPU on dispatches that run for seconds (reported as device lost)"},
    {.name = "mobile-watchdog-qualcomm",
     .vendor_id = kVendorQualcomm,
     .flags = {.short_dispatches = true},
     .why = "Adreno drivers reset the GPU on dispatches that run for seconds (reported as device lost)"},
    {.name = "mobile-watchdog-imgtec",
     .vendor_id = kVendorImgTec,
     .flags = {.short_dispatches = true},
     .why = "PowerVR drivers reset the GPU on dispatches that run for seconds (reported as device lost)"},
};

bool matches(const Quirk& q, const DeviceInfo& info) {
  if (q.cpu_device_only && info.type != DeviceType::kCpu) return false;
  if (q.vendor_id != 0 && q.vendor_id != info.vendor_id) return false;
  if (q.driver_id != 0 && q.driver_id != info.driver_id) return false;
  if (!q.driver_versions.contains(driver_version_of(info))) return false;
  return q.applies == nullptr || q.applies(info);
}

}  // namespace

uint32_t llvm_major_version(std::string_view driver_info) {
  const size_t at = driver_info.find("LLVM ");
  if (at == std::string_view::npos) return 0;
  uint32_t major = 0;
  for (size_t i = at + 5; i < driver_info.size() && driver_info[i] >= '0' && driver_info[i] <= '9'; ++i) {
    major = major * 10 + uint32_t(driver_info[i] - '0');
    if (major > 100000) return 0;
  }
  return major;
}

uint32_t driver_version_of(const DeviceInfo& info) {
  const std::string_view text = info.driver_info;
  const size_t at = text.find("Mesa ");
  if (at == std::string_view::npos) return info.driver_version;
  uint32_t parts[3] = {0, 0, 0};
  size_t i = at + 5;
  for (int p = 0; p < 3; ++p) {
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 4; ++i, ++digits)
      parts[p] = parts[p] * 10 + uint32_t(text[i] - '0');
    if (digits == 0) return info.driver_version;  // not a version after all
    if (p < 2 && (i >= text.size() || text[i++] != '.')) return info.driver_version;
  }
  return mesa_version(std::min(parts[0], 1023u), std::min(parts[1], 1023u), std::min(parts[2], 4095u));
}

std::vector<const Quirk*> quirks_for(const DeviceInfo& info) {
  std::vector<const Quirk*> out;
  for (const Quirk& q : kQuirks)
    if (matches(q, info)) out.push_back(&q);
  return out;
}

QuirkFlags quirk_flags_for(const DeviceInfo& info) {
  QuirkFlags f;
  for (const Quirk* q : quirks_for(info)) {
    f.cpu_driver |= q->flags.cpu_driver;
    f.prefer_cpu_kernels |= q->flags.prefer_cpu_kernels;
    f.short_dispatches |= q->flags.short_dispatches;
    f.no_16bit_storage |= q->flags.no_16bit_storage;
    if (q->flags.max_loop_iterations != 0 &&
        (f.max_loop_iterations == 0 || q->flags.max_loop_iterations < f.max_loop_iterations))
      f.max_loop_iterations = q->flags.max_loop_iterations;
  }
  // The CPU-family kernels shuffle within subgroups (Vulkan 1.1 does not promise it): a CPU driver
  // without shuffles runs the GPU family, which does not.
  f.prefer_cpu_kernels = f.prefer_cpu_kernels && info.caps.subgroup_shuffle;
  return f;
}

}  // namespace rill::vk
