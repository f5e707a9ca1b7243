// What the kernel-plan files (kernel_plan*.cpp) share: small arithmetic and the fit tests more than
// one op's plan makes. Internal to them.
#pragma once

#include <cstdint>
#include <optional>

#include "kernel_plan.hpp"

namespace rill::ops::plan {

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
inline uint32_t round_up(uint64_t v, uint32_t multiple) { return uint32_t(ceil_div(v, multiple) * multiple); }

// Register kernels share values inside one subgroup by shuffles: the workgroup must be exactly one
// subgroup of at least 4 lanes, of the width the driver reports (a GPU that may run it as narrower
// subgroups would shuffle across the wrong lanes).
inline bool register_subgroup_fits(const DeviceTraits& d) {
  return d.fixed_subgroup && d.subgroup >= 4 && d.subgroup <= d.max_invocations;
}
inline bool register_kernels_fit(const DeviceTraits& d) {
  return d.family == Family::kCpu && register_subgroup_fits(d);
}

// Whether the device backs 4-element texels of the storage type (f16 or f32) in `bindings` views
// of up to `texels` texels each (vk/texel_views.hpp): the CPU-driver kernels' texel reads.
inline bool texel_views_fit(const DeviceTraits& d, bool f16, uint64_t texels, uint32_t bindings) {
  return (f16 ? d.texel_f16x4 : d.texel_f32x4) && texels <= d.max_texels && d.max_texel_bindings >= bindings;
}

// The traits with the tuned choices as the forced ones and no tuning left (empty without tuning):
// a plan tries them first and keeps the result where it fits.
// The choices in effect for a key that never needs a fallback: the forced plan over the tuned one.
inline const PlanOverrides& chosen(const DeviceTraits& d) { return d.tuned ? *d.tuned : d.forced; }

inline std::optional<DeviceTraits> tuned_traits(const DeviceTraits& d) {
  if (!d.tuned) return std::nullopt;
  DeviceTraits t = d;
  t.forced = *d.tuned;
  t.tuned.reset();
  return t;
}

// The fused decoding kernels' sizes, or why they do not fit (lm_decode without the forced choices).
LmDecodePlan fused_decode_plan(const DeviceTraits& d, const LmDecodeShape& s);

}  // namespace rill::ops::plan
