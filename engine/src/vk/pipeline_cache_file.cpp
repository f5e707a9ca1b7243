// Pipeline-cache file encoding and validation.
#include "vk/pipeline_cache_file.hpp"

#include <cstring>

#include "core/fnv1a.hpp"

namespace rill::vk {
namespace {

constexpr char kMagic[8] = {'R', 'I', 'L', 'L', 'P', 'C', 'A', 'C'};
constexpr uint32_t kFormatVersion = 1;
// magic, format, vendor, device, driver, uuid, payload size, checksum
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 4 + 4 + 16 + 8 + 8;
constexpr size_t kVkHeaderBytes = 32;  // VkPipelineCacheHeaderVersionOne

template <typename T>
void put(std::vector<uint8_t>& out, size_t offset, const T& v) {
  std::memcpy(out.data() + offset, &v, sizeof(T));
}

template <typename T>
T get(std::span<const uint8_t> in, size_t offset) {
  T v;
  std::memcpy(&v, in.data() + offset, sizeof(T));
  return v;
}

}  // namespace

std::vector<uint8_t> encode_pipeline_cache(const PipelineCacheIdentity& id, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(kHeaderBytes + payload.size());
  std::memcpy(out.data(), kMagic, 8);
  put(out, 8, kFormatVersion);
  put(out, 12, id.vendor_id);
  put(out, 16, id.device_id);
  put(out, 20, id.driver_version);
  std::memcpy(out.data() + 24, id.uuid, 16);
  put(out, 40, static_cast<uint64_t>(payload.size()));
  put(out, 48, fnv1a(payload));
  if (!payload.empty()) std::memcpy(out.data() + kHeaderBytes, payload.data(), payload.size());
  return out;
}

Result<std::vector<uint8_t>> decode_pipeline_cache(const PipelineCacheIdentity& id, std::span<const uint8_t> file) {
  if (file.size() < kHeaderBytes) return data_loss("pipeline cache file is truncated (" + std::to_string(file.size()) + " bytes)");
  if (std::memcmp(file.data(), kMagic, 8) != 0) return data_loss("not a rill pipeline cache file (bad magic)");
  if (get<uint32_t>(file, 8) != kFormatVersion) return failed_precondition("pipeline cache file has another format version");
  if (get<uint32_t>(file, 12) != id.vendor_id || get<uint32_t>(file, 16) != id.device_id)
    return failed_precondition("pipeline cache file was written for another device");
  if (get<uint32_t>(file, 20) != id.driver_version || std::memcmp(file.data() + 24, id.uuid, 16) != 0)
    return failed_precondition("pipeline cache file was written by another driver version");
  const uint64_t size = get<uint64_t>(file, 40);
  if (size != file.size() - kHeaderBytes)
    return data_loss("pipeline cache file is truncated or has trailing bytes");
  std::span<const uint8_t> payload = file.subspan(kHeaderBytes);
  if (fnv1a(payload) != get<uint64_t>(file, 48)) return data_loss("pipeline cache file is corrupt (checksum mismatch)");
  // The driver's own header must agree too; drivers are not all robust against foreign data.
  if (payload.size() < kVkHeaderBytes) return data_loss("pipeline cache payload is too short");
  const uint32_t header_length = get<uint32_t>(payload, 0);
  const uint32_t header_version = get<uint32_t>(payload, 4);
  if (header_length < kVkHeaderBytes || header_length > payload.size() || header_version != 1 ||
      get<uint32_t>(payload, 8) != id.vendor_id || get<uint32_t>(payload, 12) != id.device_id ||
      std::memcmp(payload.data() + 16, id.uuid, 16) != 0)
    return failed_precondition("pipeline cache payload does not match this device");
  return std::vector<uint8_t>(payload.begin(), payload.end());
}

}  // namespace rill::vk
