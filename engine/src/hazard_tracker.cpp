// Barrier placement: which accesses conflict, and the access bits of each stage.
#include "hazard_tracker.hpp"

namespace rill::detail {
namespace {

bool overlaps(const HazardTracker::Access& a, const HazardTracker::Access& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

}  // namespace

VkAccessFlags writes_of(VkPipelineStageFlags stages) {
  VkAccessFlags a = 0;
  if (stages & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) a |= VK_ACCESS_SHADER_WRITE_BIT;
  if (stages & VK_PIPELINE_STAGE_TRANSFER_BIT) a |= VK_ACCESS_TRANSFER_WRITE_BIT;
  return a;
}
VkAccessFlags reads_and_writes_of(VkPipelineStageFlags stages) {
  VkAccessFlags a = writes_of(stages);
  if (stages & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) a |= VK_ACCESS_SHADER_READ_BIT;
  if (stages & VK_PIPELINE_STAGE_TRANSFER_BIT) a |= VK_ACCESS_TRANSFER_READ_BIT;
  return a;
}

VkPipelineStageFlags HazardTracker::conflicts(const std::vector<Access>& next) const {
  VkPipelineStageFlags stages = 0;
  for (const Access& n : next)
    for (const Access& p : pending_)
      if ((p.write || n.write) && overlaps(p, n)) stages |= p.stage;  // RAW, WAW, WAR
  return stages;
}

}  // namespace rill::detail
