// Reading the device-peaks cache without a Context (the context writes its profile summary from
// its destructor, where only its internals exist).
#pragma once

#include <string>

#include "rill/device.hpp"
#include "rill/profile.hpp"

namespace rill::detail {

Result<DevicePeaks> read_cached_peaks(const DeviceInfo& device, const std::string& cache_dir);

}  // namespace rill::detail
