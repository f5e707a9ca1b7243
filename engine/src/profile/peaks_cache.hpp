// The device-peaks cache, without a Context: the context reads it for its profile summary (from
// its destructor, where only its internals exist); ops/device_peaks.cpp writes what it measures.
#pragma once

#include <string>

#include "rill/device.hpp"
#include "rill/profile.hpp"

namespace rill::detail {

// The file that holds `device`'s peaks under `cache_dir` (empty: as below).
std::string peaks_cache_file(const DeviceInfo& device, const std::string& cache_dir);
// cache_dir empty: RILL_CACHE_DIR, else the user's cache folder (XDG, HOME, LOCALAPPDATA, temp).
Result<DevicePeaks> read_cached_peaks(const DeviceInfo& device, const std::string& cache_dir);
// Best effort: a cache that cannot be written is measured again next time.
void write_cached_peaks(const DeviceInfo& device, const std::string& cache_dir, const DevicePeaks& peaks);

}  // namespace rill::detail
