// The pipeline manager: resolves a kernel name to the variant this device should run, creates
// compute pipelines lazily per (shader, specialization constants) through a VkPipelineCache that
// can be persisted, and validates specialization values against the registry.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/profiler.hpp"
#include "rill/types.hpp"
#include "vk/device.hpp"
#include "vk/faults.hpp"
#include "vk/shader_registry.hpp"
#include "vk/unique.hpp"

namespace rill::vk {

// A pipeline as a recorder uses it; the handles belong to the PipelineManager.
struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  std::array<uint32_t, 3> local_size{1, 1, 1};
  // Unique in the process (from 1), not per context: traces of several contexts are merged into
  // one file and one summary, which must not take one context's pipeline for another's.
  uint32_t id = 0;
};

class PipelineManager {
 public:
  // capture_statistics: keep each pipeline's compiler statistics where the device reports them.
  PipelineManager(Device& device, FaultInjector& faults, detail::Profiler& profiler, std::string cache_path,
                  std::string variant_override, bool capture_statistics);
  PipelineManager(const PipelineManager&) = delete;
  PipelineManager& operator=(const PipelineManager&) = delete;

  // Creates the VkPipelineCache, seeded from the cache file when it is valid for this device.
  Status init();

  // The shader that runs `kernel` here: `variant` if given, else the context override, else the
  // device's preference (quirks), else the default variant.
  Result<const ShaderInfo*> resolve(std::string_view kernel, std::string_view variant = {}) const;

  // The pipeline for `shader` with `spec` applied (created on first use).
  Result<Pipeline> get(const ShaderInfo& shader, std::span<const SpecValue> spec);

  // To the cache path, atomically, merged with the pipelines another context or process saved
  // there since this one loaded it; no-op without a path.
  Status save() const;
  // The variant family this context prefers: the override if set, else the device's ("cpu"/"gpu").
  std::string_view preferred_variant() const;
  PipelineStats stats() const { return stats_; }
  // Pipeline `id`'s compiler statistics (empty when not captured); NotFound for an unknown id.
  Result<std::vector<PipelineStatistic>> statistics(uint32_t id) const;

 private:
  struct Layout {
    UniqueShaderModule module;
    UniqueDescriptorSetLayout set_layout;
    UniquePipelineLayout layout;  // last: destroyed before the set layout it uses
  };
  struct Created {
    UniquePipeline owned;
    Pipeline pipeline;
  };
  Result<Layout*> layout_for(const ShaderInfo& shader);
  // This cache's data merged with the cache file's as it is now; none where the file is missing,
  // not this device's, or the driver refuses it.
  std::optional<std::vector<uint8_t>> merged_with_file() const;

  Device& device_;
  FaultInjector& faults_;
  detail::Profiler& profiler_;
  std::string cache_path_;
  std::string variant_override_;
  // Declared in creation order, so destroyed pipelines first, then layouts, then the cache.
  UniquePipelineCache cache_;
  std::map<const ShaderInfo*, Layout> layouts_;
  std::map<std::pair<const ShaderInfo*, std::vector<uint32_t>>, Created> pipelines_;
  std::map<uint32_t, std::vector<PipelineStatistic>> statistics_;  // by id
  bool capture_statistics_ = false;
  PipelineStats stats_;
};

}  // namespace rill::vk
