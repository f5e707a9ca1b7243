// The traits of devices rill is not running on, for the kernel-plan tests: a CPU driver, a
// datacenter GPU, a phone-class GPU.
#pragma once

#include "kernel_plan.hpp"

namespace rill_test {

inline rill::ops::plan::DeviceTraits lavapipe_like() {
  rill::ops::plan::DeviceTraits d;
  d.family = rill::ops::plan::Family::kCpu;
  d.subgroup = 8;
  d.max_invocations = 1024;
  d.shared_bytes = 32768;
  d.loop_budget = 65535ull * 7 / 8;
  d.max_storage_range = 128ull << 20;
  d.texel_f32x4 = true;  // lavapipe 22.3: 2^27 texels, 64 sampled images per stage
  d.texel_f16x4 = true;
  d.texel_u32x4 = true;
  d.max_texels = 1ull << 27;
  d.max_texel_bindings = 64;
  return d;
}

inline rill::ops::plan::DeviceTraits h100_like() {
  rill::ops::plan::DeviceTraits d;
  d.family = rill::ops::plan::Family::kGpu;
  d.subgroup = 32;
  d.max_invocations = 1024;
  d.shared_bytes = 49152;
  d.max_storage_range = 4ull << 30;
  d.texel_f32x4 = true;  // GPUs back texel buffers too; their plans do not choose them
  d.max_texels = 1ull << 27;
  d.max_texel_bindings = 1u << 20;
  return d;
}

// Mali-class limits (the mobile profile of the edge issue): small shared memory, short dispatches.
inline rill::ops::plan::DeviceTraits mali_like() {
  rill::ops::plan::DeviceTraits d;
  d.family = rill::ops::plan::Family::kGpu;
  d.subgroup = 16;
  d.subgroup_arithmetic = false;
  d.max_invocations = 256;
  d.shared_bytes = 16384;
  d.short_dispatches = true;
  d.max_storage_range = 128ull << 20;
  d.unified_memory = true;  // a phone's GPU shares the system's memory
  return d;
}

}  // namespace rill_test
