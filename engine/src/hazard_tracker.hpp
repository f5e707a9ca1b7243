// Where a sequence needs barriers: the accesses since the last barrier, and the access bits of
// the stages rill records (compute and transfer).
#pragma once

#include <cstdint>
#include <vector>

#include "vk/vk_common.hpp"

namespace rill::detail {

constexpr VkPipelineStageFlags kWorkStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kAllWorkAccess =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

// The write access bits of `stages`, and its read and write bits, as the barrier rules require.
VkAccessFlags writes_of(VkPipelineStageFlags stages);
VkAccessFlags reads_and_writes_of(VkPipelineStageFlags stages);

// Accesses since the last barrier; a new access that conflicts with one of them needs a barrier.
class HazardTracker {
 public:
  struct Access {
    VkBuffer buffer;
    uint64_t offset, size;
    bool write;
    VkPipelineStageFlags stage;
  };
  // Returns the source stages to wait for (0: no barrier needed) before `next`.
  VkPipelineStageFlags conflicts(const std::vector<Access>& next) const;
  // The stages of every access since the last barrier: a barrier that forgets them all must wait
  // for all of them, not only for the conflicting ones (a fill, then a dispatch that conflicts with
  // something else, then a dispatch that writes the filled buffer needs the transfer stage too).
  VkPipelineStageFlags pending_stages() const {
    VkPipelineStageFlags stages = 0;
    for (const Access& a : pending_) stages |= a.stage;
    return stages;
  }
  void barrier() { pending_.clear(); }
  void add(const std::vector<Access>& accesses) { pending_.insert(pending_.end(), accesses.begin(), accesses.end()); }

 private:
  std::vector<Access> pending_;
};

}  // namespace rill::detail
