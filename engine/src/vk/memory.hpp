// Device memory: tensors are sub-allocated from large blocks (one VkDeviceMemory and one VkBuffer
// spanning it), with separate blocks for long-lived weights, short-lived activations, host
// staging and the small inputs the host rewrites between runs (uploads). On unified memory the
// device blocks are host-visible and stay mapped, so uploads and downloads are plain memcpy; on a
// discrete GPU only the staging and upload blocks are.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "rill/types.hpp"
#include "vk/device.hpp"
#include "vk/faults.hpp"
#include "vk/unique.hpp"

namespace rill::vk {

// kUploads: MemoryPool::kUploads (rill/types.hpp), host-visible everywhere, in small blocks.
enum class PoolKind { kWeights, kActivations, kStaging, kUploads };

// The memory types a pool's block may take, best first, among the types in `type_bits`:
// weights and activations device-local (and host-visible too where `device_mapped`, unified
// memory); staging host-visible and coherent, host-cached first (downloads read it back); uploads
// host-visible and coherent, device-local first (the GPU reads them in place: a discrete GPU's
// host-visible window of its own memory). Never a type that needs a feature rill does not enable
// (protected memory, AMD's device-coherent types). Empty when no type fits.
std::vector<uint32_t> memory_type_candidates(const VkPhysicalDeviceMemoryProperties& mem, uint32_t type_bits,
                                             PoolKind pool, bool device_mapped);

struct MemoryBlock {
  UniqueDeviceMemory memory;
  UniqueBuffer buffer;  // after the memory: destroyed before it
  uint64_t size = 0;    // the buffer's bytes, sub-allocated
  uint64_t device_bytes = 0;  // what the driver allocated for it (its requirement, at least size)
  uint8_t* mapped = nullptr;  // host pointer: staging and upload blocks, device blocks on unified memory
  PoolKind pool = PoolKind::kActivations;
  bool dedicated = false;              // holds exactly one allocation
  std::map<uint64_t, uint64_t> free;   // offset -> size of each free range
  uint64_t used = 0;
};

struct Allocation {
  MemoryBlock* block = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;  // reserved (aligned) size
  explicit operator bool() const { return block != nullptr; }
  VkBuffer buffer() const { return block->buffer.get(); }
  uint8_t* mapped() const { return block && block->mapped ? block->mapped + offset : nullptr; }
};

// The size of the blocks small tensors share: `requested` (ContextOptions::memory_block_bytes), at
// most an eighth of a nonzero budget, at least 1 MiB, in whole 256-byte granules that never pass
// the device's largest allocation.
uint64_t shared_block_bytes(uint64_t requested, uint64_t budget, uint64_t max_allocation);

class Allocator {
 public:
  // budget: the most device memory the blocks other than staging may hold together (0: no budget);
  // shared blocks are then at most an eighth of it, so that small tensors do not take a large block
  // each.
  Allocator(Device& device, FaultInjector& faults, uint64_t block_bytes, uint64_t budget = 0);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Largest single allocation the device allows, and the alignment of every offset.
  uint64_t max_allocation_bytes() const;
  static constexpr uint64_t kAlignment = 256;  // >= every device's minStorageBufferOffsetAlignment
  // Upload blocks: a few token ids and positions, within the 256 MiB host-visible window of device
  // memory that discrete GPUs without resizable BAR have.
  static constexpr uint64_t kUploadBlockBytes = 1ull << 20;

  Result<Allocation> allocate(uint64_t bytes, PoolKind pool);
  void release(const Allocation& allocation) noexcept;  // from destructors: never throws

  bool device_pools_mapped() const { return device_mapped_; }
  MemoryStats stats() const;
  void reset_peak() { stats_.peak_used_bytes = stats_.used_bytes; }

 private:
  Result<MemoryBlock*> new_block(uint64_t size, PoolKind pool, bool dedicated);
  void destroy_block(MemoryBlock* block);

  Device& device_;
  FaultInjector& faults_;
  uint64_t block_bytes_;
  uint64_t budget_ = 0;
  bool device_mapped_ = false;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
  MemoryStats stats_;
};

}  // namespace rill::vk
