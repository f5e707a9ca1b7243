// The device-peaks cache: one JSON file per device and driver under the user's cache folder,
// read as untrusted input and written atomically.
#include "profile/peaks_cache.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "core/cpu_driver_threads.hpp"
#include "core/file_io.hpp"
#include "core/fnv1a.hpp"
#include "core/json_keys.hpp"
#include "platform/files.hpp"

namespace rill::detail {
namespace {

// The user's own cache folder; empty where there is none (no cache then: a folder shared by every
// user, such as one in /tmp, would let another user plant or redirect the file).
std::string cache_directory(const std::string& dir) {
  if (!dir.empty()) return dir;
  if (const char* d = std::getenv("RILL_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/rill";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/rill";
  if (const char* a = std::getenv("LOCALAPPDATA"); a && *a) return std::string(a) + "/rill/cache";  // Windows
  return "";
}

// The device's name as the cache holds it (a name that is not UTF-8 is written with replacements).
std::string cached_name(const std::string& name) {
  return nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Best effort: a cache that cannot be written is measured again next time.
void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(platform::path_from_utf8(path), ec);
}

}  // namespace

// One file per device, driver and limit profile (a profile's narrower workgroups and missing f16
// measure other peaks than the device's own), and per host thread count for CPU drivers
// (cpu_driver_threads.hpp). The driver is its version and a hash of its description: lavapipe
// reports version 1 for every Mesa release and names the release only in the description.
std::string peaks_cache_file(const DeviceInfo& d, const std::string& dir) {
  const std::string threads = detail::cpu_driver_threads(d);
  char name[160];
  std::snprintf(name, sizeof name, "/peaks-%04x-%04x-%08x-%.8s", d.vendor_id, d.device_id, d.driver_version,
                Fnv1a().add(d.driver_info).hex().c_str());
  return cache_directory(dir) + name + (threads.empty() ? "" : "-" + threads) +
         (d.limit_profile.empty() ? "" : "-" + d.limit_profile) + ".json";
}

Result<DevicePeaks> read_cached_peaks(const DeviceInfo& device, const std::string& cache_dir) {
  if (cache_directory(cache_dir).empty())
    return not_found("no cache folder of this user's (RILL_CACHE_DIR, XDG_CACHE_HOME, HOME or LOCALAPPDATA)");
  const std::string path = peaks_cache_file(device, cache_dir);
  RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path, 1 << 16));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (nests_deeper_than(text, 4)) return data_loss("peaks cache '" + path + "' nests deeper than a peaks cache does");
  if (auto dup = first_duplicate_key(text))
    return data_loss("peaks cache '" + path + "' has the key '" + *dup + "' twice");
  try {
    const auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    if (!j.is_object() || (j.contains("method") && !j["method"].is_number_integer()))
      return data_loss("peaks cache '" + path + "' is malformed: not an object with an integer 'method'");
    // Figures of other probes (an older rill's, or none named) are not these: measured again, silently.
    if (!j.contains("method") || j["method"] != kPeaksMethod)
      return not_found("peaks cache '" + path + "' holds another version of rill's probes (this rill's: method " +
                       std::to_string(kPeaksMethod) + ")");
    DevicePeaks p;
    p.device = j.at("device").get<std::string>();
    p.fma_f32_gflops = j.at("fma_f32_gflops").get<double>();
    p.fma_f16_gflops = j.at("fma_f16_gflops").get<double>();
    p.copy_gbps = j.at("copy_gbps").get<double>();
    p.dispatch_latency_us = j.at("dispatch_latency_us").get<double>();
    // Each figure finite and within what any device could measure (a datacenter GPU is ~1e5 GFLOP/s).
    auto within = [](double v, double low, double high) { return std::isfinite(v) && v >= low && v <= high; };
    if (!within(p.fma_f32_gflops, 1e-3, 1e7) || !within(p.fma_f16_gflops, 0.0, 1e7) ||
        !within(p.copy_gbps, 1e-3, 1e6) || !within(p.dispatch_latency_us, 0.0, 1e7))
      return data_loss("peaks cache '" + path + "' holds implausible values");
    if (cached_name(p.device) != cached_name(device.name))
      return failed_precondition("peaks cache '" + path + "' was measured on another device ('" + p.device + "')");
    p.device = device.name;
    return p;
  } catch (const nlohmann::json::exception& e) {
    return data_loss("peaks cache '" + path + "' is malformed: " + e.what());
  }
}

void write_cached_peaks(const DeviceInfo& device, const std::string& cache_dir, const DevicePeaks& p) {
  if (cache_directory(cache_dir).empty()) return;  // measured again next time
  const std::string path = peaks_cache_file(device, cache_dir);
  make_dirs(cache_directory(cache_dir));
  const nlohmann::json j = {{"method", kPeaksMethod},
                            {"device", p.device},
                            {"fma_f32_gflops", p.fma_f32_gflops},
                            {"fma_f16_gflops", p.fma_f16_gflops},
                            {"copy_gbps", p.copy_gbps},
                            {"dispatch_latency_us", p.dispatch_latency_us}};
  // A driver's device name need not be UTF-8: replaced, not thrown (strict dumping throws).
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  // A cache that cannot be written is not an error: the peaks are still returned.
  (void)write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace rill::detail
