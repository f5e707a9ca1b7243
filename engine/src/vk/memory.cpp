// First-fit sub-allocation with coalescing free lists, one list per block.
#include "vk/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

#include "core/checked_math.hpp"
#include "vk/texel_views.hpp"

namespace rill::vk {
namespace {

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

uint64_t shared_block_bytes(uint64_t requested, uint64_t budget, uint64_t max_allocation) {
  if (budget != 0) requested = std::min(requested, budget / 8);
  // Whole granules within the limit: a limit that is not a multiple of one (RADV's 0xFFFFFFFC)
  // rounded up would make every shared block one the driver may refuse.
  const uint64_t most =
      std::max<uint64_t>(max_allocation / Allocator::kAlignment * Allocator::kAlignment, Allocator::kAlignment);
  return std::min(align_up(std::max<uint64_t>(requested, 1ull << 20), Allocator::kAlignment), most);
}

Allocator::Allocator(Device& device, FaultInjector& faults, uint64_t block_bytes, uint64_t budget)
    : device_(device), faults_(faults), budget_(budget) {
  block_bytes_ = shared_block_bytes(block_bytes, budget, max_allocation_bytes());
  device_mapped_ = device.info().caps.unified_memory;
}

Allocator::~Allocator() {
  for (auto& b : blocks_) destroy_block(b.get());
}

uint64_t Allocator::max_allocation_bytes() const {
  const uint64_t m = device_.info().caps.max_allocation_bytes;
  return m != 0 ? m : (1ull << 30);  // Vulkan guarantees at least 1 GiB
}

std::vector<uint32_t> memory_type_candidates(const VkPhysicalDeviceMemoryProperties& mem, uint32_t type_bits,
                                             PoolKind pool, bool device_mapped) {
  constexpr VkMemoryPropertyFlags kHost = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags required = 0, preferred = 0;
  switch (pool) {
    case PoolKind::kStaging:
      required = kHost;
      preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
    case PoolKind::kUploads:
      required = kHost;
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      break;
    case PoolKind::kWeights:
    case PoolKind::kActivations:
      required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | (device_mapped ? kHost : 0);
      break;
  }
  std::vector<uint32_t> best, rest;
  for (uint32_t t = 0; t < mem.memoryTypeCount && t < 32; ++t) {
    if (!(type_bits & (1u << t))) continue;
    const VkMemoryPropertyFlags f = mem.memoryTypes[t].propertyFlags;
    if ((f & required) != required || (f & kMemoryNeedingFeatures) != 0) continue;
    ((f & preferred) == preferred ? best : rest).push_back(t);
  }
  best.insert(best.end(), rest.begin(), rest.end());
  return best;
}

Result<MemoryBlock*> Allocator::new_block(uint64_t size, PoolKind pool, bool dedicated) {
  // Never a power of two in size (texel_views.hpp: texel_view_bytes says why): one granule more.
  if ((size & (size - 1)) == 0 && size + kAlignment <= max_allocation_bytes()) size += kAlignment;
  // Staging blocks are host memory on a discrete GPU (tensors on a unified-memory device are mapped
  // and take none): outside the budget, so that what a full budget holds can still be uploaded.
  const bool budgeted = pool != PoolKind::kStaging;
  const uint64_t budgeted_bytes = stats_.reserved_bytes - stats_.staging_bytes;
  auto over_budget = [&](uint64_t asked) -> Status {
    if (budget_ == 0 || !budgeted || budgeted_bytes + asked <= budget_) return Status::ok();
    return resource_exhausted("the context's device memory budget of " + mib(budget_) +
                              " is spent: " + mib(budgeted_bytes) + " held, " + mib(asked) +
                              " more asked for (ContextOptions::device_memory_budget, RILL_DEVICE_MEMORY_BUDGET)");
  };
  RILL_RETURN_IF_ERROR(over_budget(size));
  const auto& fn = device_.fn();
  auto block = std::make_unique<MemoryBlock>();
  block->size = size;
  block->pool = pool;
  block->dedicated = dedicated;

  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.size = size;
  // Uniform texel buffer too: a kernel may read a tensor through a texel view (vk/texel_views.hpp).
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkDevice dev = device_.handle();
  RILL_ASSIGN_OR_RETURN(
      block->buffer,
      create_unique<UniqueBuffer>(device_, faults_, "vkCreateBuffer (" + mib(size) + " block)",
                                  [&](auto* out) { return fn.vkCreateBuffer(dev, &buffer_info, nullptr, out); }));
  VkMemoryRequirements req{};
  fn.vkGetBufferMemoryRequirements(dev, block->buffer.get(), &req);
  // The driver may allocate more than the buffer spans: the budget and the stats count that.
  RILL_RETURN_IF_ERROR(over_budget(req.size));
  block->device_bytes = req.size;
  const std::vector<uint32_t> types =
      memory_type_candidates(device_.memory_properties(), req.memoryTypeBits, pool, device_mapped_);
  if (types.empty()) return unavailable("no suitable memory type for a " + mib(size) + " buffer");
  // An upload block may find the small host-visible window of device memory full: then the
  // next type (host memory the GPU reads over the bus).
  uint32_t type = 0;
  for (size_t i = 0; !block->memory; ++i) {
    type = types[i];
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = type;
    auto memory =
        create_unique<UniqueDeviceMemory>(device_, faults_, "vkAllocateMemory (" + mib(req.size) + ")",
                                          [&](auto* out) { return fn.vkAllocateMemory(dev, &alloc, nullptr, out); });
    const bool next =
        pool == PoolKind::kUploads && i + 1 < types.size() && memory.status().code() == StatusCode::kResourceExhausted;
    if (memory.is_ok())
      block->memory = std::move(memory).value();
    else if (!next)
      return memory.status();
  }
  ++stats_.device_memory_allocations;
  VkResult r = fn.vkBindBufferMemory(dev, block->buffer.get(), block->memory.get(), 0);
  // Device blocks only on unified memory (their types are then coherent): a discrete GPU's
  // host-visible device memory may be incoherent, or uncached and slow to read back.
  const bool host_visible =
      device_.memory_properties().memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  const bool map = host_visible && (pool == PoolKind::kStaging || pool == PoolKind::kUploads || device_mapped_);
  void* mapped = nullptr;
  if (r == VK_SUCCESS && map)
    r = faults_.run([&] { return fn.vkMapMemory(dev, block->memory.get(), 0, VK_WHOLE_SIZE, 0, &mapped); });
  if (r != VK_SUCCESS) return device_.check(r, "binding or mapping a memory block");
  block->mapped = static_cast<uint8_t*>(mapped);
  block->free[0] = size;
  ++stats_.blocks;
  stats_.reserved_bytes += block->device_bytes;
  if (!budgeted) stats_.staging_bytes += block->device_bytes;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

void Allocator::destroy_block(MemoryBlock* block) {
  if (block->mapped) device_.fn().vkUnmapMemory(device_.handle(), block->memory.get());
  block->buffer.reset();
  block->memory.reset();
  --stats_.blocks;
  stats_.reserved_bytes -= block->device_bytes;
  if (block->pool == PoolKind::kStaging) stats_.staging_bytes -= block->device_bytes;
}

Result<Allocation> Allocator::allocate(uint64_t bytes, PoolKind pool) {
  if (bytes == 0) return invalid_argument("cannot allocate 0 bytes");
  const auto aligned = checked_align_up(bytes, kAlignment);
  if (!aligned || *aligned > max_allocation_bytes())
    return out_of_range("an allocation of " + std::to_string(bytes) + " bytes exceeds the device's " +
                        "maxMemoryAllocationSize of " + std::to_string(max_allocation_bytes()) + " bytes");
  // Room for the bytes a texel view of the tensor covers (a spare granule where needed;
  // texel_views.hpp: texel_view_bytes says why).
  const uint64_t size = std::max(*aligned, texel_view_bytes(bytes, max_allocation_bytes()));

  MemoryBlock* block = nullptr;
  uint64_t offset = 0;
  const uint64_t pool_block = pool == PoolKind::kUploads ? kUploadBlockBytes : block_bytes_;
  if (*aligned <= pool_block / 2) {
    for (auto& b : blocks_) {
      if (b->pool != pool || b->dedicated) continue;
      for (auto& [off, len] : b->free) {
        if (len >= size) {
          block = b.get();
          offset = off;
          break;
        }
      }
      if (block) break;
    }
    if (!block) {
      RILL_ASSIGN_OR_RETURN(block, new_block(pool_block, pool, false));
    }
  } else {
    RILL_ASSIGN_OR_RETURN(block, new_block(size, pool, true));
  }
  // Carve [offset, offset + size) out of the free range that starts at offset; what is left keeps
  // the range's node, re-keyed (no allocation: nothing can fail once the range is chosen).
  auto node = block->free.extract(offset);
  if (node.mapped() > size) {
    node.key() = offset + size;
    node.mapped() -= size;
    block->free.insert(std::move(node));
  }
  block->used += size;
  stats_.used_bytes += size;
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, stats_.used_bytes);
  ++stats_.live_allocations;
  return Allocation{block, offset, size};
}

namespace {

// Gives [offset, offset + size) back to the block's free ranges, merged with its neighbours. It runs
// in destructors, so it never throws: a range that joins a neighbour takes no new node (a node that
// moves down is re-keyed), and one that joins none and finds no memory for a node stays out of use
// until the block is empty again.
void add_free_range(MemoryBlock& block, uint64_t offset, uint64_t size) noexcept {
  auto next = block.free.lower_bound(offset);
  const bool joins_next = next != block.free.end() && offset + size == next->first;
  if (next != block.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size + (joins_next ? next->second : 0);
      if (joins_next) block.free.erase(next);
      return;
    }
  }
  if (joins_next) {
    auto node = block.free.extract(next);
    node.key() = offset;
    node.mapped() += size;
    block.free.insert(std::move(node));
    return;
  }
  try {
    block.free.emplace(offset, size);
  } catch (const std::bad_alloc&) {
  }
}

// An empty block's free ranges as one, [0, size), from a node it has: ranges lost for want of a
// node come back. False where it has no node left.
bool reset_free_ranges(MemoryBlock& block) noexcept {
  if (block.free.empty()) return false;
  auto node = block.free.extract(block.free.begin());
  block.free.clear();
  node.key() = 0;
  node.mapped() = block.size;
  block.free.insert(std::move(node));
  return true;
}

}  // namespace

void Allocator::release(const Allocation& a) noexcept {
  if (!a.block) return;
  MemoryBlock* block = a.block;
  block->used -= a.size;
  stats_.used_bytes -= a.size;
  --stats_.live_allocations;
  add_free_range(*block, a.offset, a.size);
  if (block->used != 0) return;
  // Dedicated blocks go at once; an empty shared block goes unless it is its pool's last one.
  bool keep = !block->dedicated && reset_free_ranges(*block);
  if (keep) {
    int shared_in_pool = 0;
    for (auto& b : blocks_)
      if (b->pool == block->pool && !b->dedicated) ++shared_in_pool;
    keep = shared_in_pool == 1;
  }
  if (keep) return;
  destroy_block(block);
  blocks_.erase(std::find_if(blocks_.begin(), blocks_.end(), [&](auto& b) { return b.get() == block; }));
}

MemoryStats Allocator::stats() const { return stats_; }

}  // namespace rill::vk
