// The device-peaks cache, without a Context: the context reads it for its profile summary (from
// its destructor, where only its internals exist); ops/device_peaks.cpp writes what it measures.
#pragma once

#include <string>

#include "rill/device.hpp"
#include "rill/profile.hpp"

namespace rill::detail {

// How the peaks are measured: bump it when ops/device_peaks.cpp's probes change what they measure
// (sizes, timing, what a figure counts), so that caches of the old probes are measured again.
inline constexpr int kPeaksMethod = 1;

// The file that holds `device`'s peaks under `cache_dir` (empty: as below).
std::string peaks_cache_file(const DeviceInfo& device, const std::string& cache_dir);
// cache_dir empty: RILL_CACHE_DIR, else the user's cache folder (XDG, HOME, LOCALAPPDATA, temp).
Result<DevicePeaks> read_cached_peaks(const DeviceInfo& device, const std::string& cache_dir);
// Best effort: a cache that cannot be written is measured again next time.
void write_cached_peaks(const DeviceInfo& device, const std::string& cache_dir, const DevicePeaks& peaks);

}  // namespace rill::detail
