// The on-disk pipeline cache: rill's own header (magic, format version, device identity, payload
// size and checksum) in front of vkGetPipelineCacheData's bytes. The file is untrusted input: it
// is checked completely before any of it reaches the driver.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/status.hpp"

namespace rill::vk {

struct PipelineCacheIdentity {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint8_t uuid[16] = {};
};

std::vector<uint8_t> encode_pipeline_cache(const PipelineCacheIdentity& id, std::span<const uint8_t> payload);

// Returns the payload, or DataLoss (corrupt, truncated) / FailedPrecondition (another device or
// driver) with a message saying why.
Result<std::vector<uint8_t>> decode_pipeline_cache(const PipelineCacheIdentity& id, std::span<const uint8_t> file);

}  // namespace rill::vk
