// The value types every part of rill shares, from the Vulkan layer up to the API: element types,
// memory pools, message severities, memory and pipeline statistics, specialization values.
// Plain data; the classes that use them (Context, Tensor, Sequence) are in their own headers.
#pragma once

#include <cstdint>
#include <string>

#include "rill/export.hpp"

namespace rill {

enum class DType { kF32, kF16, kI32, kU32, kU8 };
RILL_API const char* dtype_name(DType dtype);
RILL_API uint32_t dtype_size(DType dtype);

// Weights live for the whole program; activations are short-lived scratch. They come from
// separate blocks so that churn in one does not fragment the other.
// Where a tensor's memory comes from: long-lived weights and state, activations, or uploads: small
// inputs the host rewrites before every run of a sequence (a decoding step's token and position).
// Upload tensors are host-visible on every device (on a discrete GPU its host-visible window of
// device memory where there is one), so Context::upload to them is a memcpy rather than a copy
// submitted and waited for; keep them small (a discrete GPU may have 256 MiB of such memory).
enum class MemoryPool { kWeights, kActivations, kUploads };

enum class MessageSeverity { kInfo, kWarning, kError };

struct MemoryStats {
  uint64_t blocks = 0;          // VkDeviceMemory objects held
  uint64_t reserved_bytes = 0;  // their total size
  // Of reserved_bytes, the blocks that stage uploads and downloads (host memory on a discrete GPU;
  // none on a unified-memory device): outside ContextOptions::device_memory_budget.
  uint64_t staging_bytes = 0;
  uint64_t used_bytes = 0;      // bytes of live sub-allocations (after alignment)
  uint64_t peak_used_bytes = 0;
  uint64_t live_allocations = 0;
  uint64_t device_memory_allocations = 0;  // vkAllocateMemory calls so far
};

struct PipelineStats {
  uint64_t pipelines_created = 0;
  uint64_t lookups = 0;            // dispatch-time lookups of an existing pipeline
  uint64_t driver_cache_hits = 0;  // creation served from the VkPipelineCache (creation feedback)
  double creation_ms_total = 0.0;
  double creation_ms_max = 0.0;
  bool cache_loaded = false;          // a pipeline-cache file was read and accepted
  std::string cache_rejected_reason;  // why a cache file was ignored; empty when none was
};

// One of the driver's compiler statistics for a pipeline (VK_KHR_pipeline_executable_properties):
// registers, spilled or shared memory, instruction counts, whatever the driver reports, by its names.
struct PipelineStatistic {
  std::string name;
  double value = 0.0;
  std::string description;
};

// A specialization constant set by the name it has in the shader.
struct SpecValue {
  std::string name;
  uint32_t bits = 0;  // the 32-bit value (use spec_float for floats)
};
RILL_API SpecValue spec_uint(std::string name, uint32_t value);
RILL_API SpecValue spec_int(std::string name, int32_t value);
RILL_API SpecValue spec_float(std::string name, float value);

}  // namespace rill
