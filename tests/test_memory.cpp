// Sub-allocation: sizes from 1 byte to hundreds of MiB, alignment, no overlap, block reuse,
// pools kept apart, and clear errors for sizes the device cannot hold or bind.
#include <algorithm>
#include <map>
#include <vector>

#include "access.hpp"
#include "context_impl.hpp"
#include "gpu_test.hpp"
#include "scoped_env.hpp"
#include "vk/texel_views.hpp"

namespace {

struct Placement {
  const rill::vk::MemoryBlock* block;
  uint64_t offset, size;
};

Placement placement(const rill::Tensor& t) {
  const auto& a = rill::detail::Access::storage(t)->allocation;
  return {a.block, a.offset, a.size};
}

}  // namespace

GPU_TEST_CASE("tensors of 1 byte to 300 MiB are aligned, disjoint and round-trip", "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  const std::vector<int64_t> sizes = {1, 3, 255, 256, 257, 4095, 65537, 1 << 20, 33 << 20, 300 << 20};
  std::vector<rill::Tensor> tensors;
  for (int64_t n : sizes) {
    auto t = ctx.tensor(rill::DType::kU8, {n}, "t" + std::to_string(n));
    INFO(t.status().to_string());
    REQUIRE(t.is_ok());
    tensors.push_back(std::move(t).value());
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Placement p = placement(tensors[i]);
    CHECK(p.offset % 256 == 0);
    CHECK(p.size >= tensors[i].size_bytes());
    // Room for a texel view with a bit of 8-15 of its size set, in a block whose size is not a
    // power of two (both keep lavapipe from compiling a kernel again: vk/texel_views.hpp).
    CHECK(((rill::vk::texel_view_bytes(tensors[i].size_bytes(), p.size) >> 8) & 0xff) != 0);
    CHECK((p.block->size & (p.block->size - 1)) != 0);
    for (size_t j = 0; j < i; ++j) {
      const Placement q = placement(tensors[j]);
      if (p.block == q.block) CHECK((p.offset + p.size <= q.offset || q.offset + q.size <= p.offset));
    }
  }
  // Round trip on a few sizes, including odd ones.
  for (size_t i : {0, 2, 4, 7}) {
    std::vector<uint8_t> data(tensors[i].size_bytes());
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<uint8_t>(k * 31 + i);
    REQUIRE(ctx.upload(tensors[i], data).is_ok());
    std::vector<uint8_t> back(data.size());
    REQUIRE(ctx.download(tensors[i], back).is_ok());
    CHECK(back == data);
  }
}

GPU_TEST_CASE("many small tensors share a few device allocations and freed space is reused", "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  const uint64_t before = ctx.memory_stats().device_memory_allocations;
  {
    std::vector<rill::Tensor> many;
    for (int i = 0; i < 1000; ++i) many.push_back(std::move(ctx.tensor(rill::DType::kF32, {1 + i % 97})).value());
    CHECK(ctx.memory_stats().device_memory_allocations - before <= 2);
    CHECK(ctx.memory_stats().live_allocations == 1000);
  }
  CHECK(ctx.memory_stats().live_allocations == 0);
  CHECK(ctx.memory_stats().used_bytes == 0);
  // Freed ranges coalesce: a tensor as large as half a block fits again without a new block.
  const uint64_t blocks = ctx.memory_stats().blocks;
  const uint64_t allocations = ctx.memory_stats().device_memory_allocations;
  auto big = ctx.tensor(rill::DType::kU8, {32 << 20});
  REQUIRE(big.is_ok());
  CHECK(ctx.memory_stats().blocks == blocks);
  CHECK(ctx.memory_stats().device_memory_allocations == allocations);
}

GPU_TEST_CASE("weights and activations come from different blocks", "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  auto w = ctx.tensor(rill::DType::kF32, {16}, "w", rill::MemoryPool::kWeights);
  auto a = ctx.tensor(rill::DType::kF32, {16}, "a", rill::MemoryPool::kActivations);
  REQUIRE(w.is_ok());
  REQUIRE(a.is_ok());
  CHECK(placement(*w).block != placement(*a).block);
}

GPU_TEST_CASE("upload tensors are host-visible, in small blocks of their own, and take a plain upload",
              "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  auto u = ctx.tensor(rill::DType::kU32, {4}, "u", rill::MemoryPool::kUploads);
  auto v = ctx.tensor(rill::DType::kU32, {4}, "v", rill::MemoryPool::kUploads);
  auto a = ctx.tensor(rill::DType::kU32, {4}, "a", rill::MemoryPool::kActivations);
  auto w = ctx.tensor(rill::DType::kU32, {4}, "w", rill::MemoryPool::kWeights);
  REQUIRE(u.is_ok());
  REQUIRE(v.is_ok());
  REQUIRE(a.is_ok());
  REQUIRE(w.is_ok());
  const Placement pu = placement(*u);
  CHECK(pu.block->pool == rill::vk::PoolKind::kUploads);
  CHECK(pu.block->mapped != nullptr);
  // Its own small size, one granule more where that is a power of two (vk/texel_views.hpp).
  CHECK(pu.block->size >= rill::vk::Allocator::kUploadBlockBytes);
  CHECK(pu.block->size <= rill::vk::Allocator::kUploadBlockBytes + 256);
  CHECK(placement(*v).block == pu.block);
  CHECK(placement(*a).block != pu.block);
  CHECK(placement(*w).block != pu.block);
  // An upload lands where the kernels read it, and a download reads it back.
  const std::vector<uint32_t> values = {7, 0, 0xffffffffu, 42};
  REQUIRE(ctx.upload(*u, {reinterpret_cast<const uint8_t*>(values.data()), 16}).is_ok());
  auto copy = ctx.sequence();
  REQUIRE(copy.is_ok());
  REQUIRE(copy->copy(*u, *a).is_ok());
  REQUIRE(copy->run().is_ok());
  std::vector<uint32_t> back(4);
  REQUIRE(ctx.download(*a, {reinterpret_cast<uint8_t*>(back.data()), 16}).is_ok());
  CHECK(back == values);
}

TEST_CASE("memory types: uploads prefer device-local host-visible memory, staging host-cached", "[memory]") {
  using rill::vk::PoolKind;
  constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  constexpr VkMemoryPropertyFlags kHost = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  constexpr VkMemoryPropertyFlags kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  auto properties = [](std::vector<VkMemoryPropertyFlags> types) {
    VkPhysicalDeviceMemoryProperties mem{};
    mem.memoryTypeCount = uint32_t(types.size());
    for (size_t i = 0; i < types.size(); ++i) mem.memoryTypes[i].propertyFlags = types[i];
    return mem;
  };
  using Types = std::vector<uint32_t>;
  // A discrete GPU as NVIDIA's drivers list it: device memory, host memory (coherent; cached), and
  // the host-visible window of device memory.
  const auto discrete = properties({kLocal, kHost, kHost | kCached, kLocal | kHost});
  CHECK(rill::vk::memory_type_candidates(discrete, ~0u, PoolKind::kUploads, false) == Types{3, 1, 2});
  CHECK(rill::vk::memory_type_candidates(discrete, ~0u, PoolKind::kStaging, false) == Types{2, 1, 3});
  CHECK(rill::vk::memory_type_candidates(discrete, ~0u, PoolKind::kActivations, false) == Types{0, 3});
  CHECK(rill::vk::memory_type_candidates(discrete, ~0u, PoolKind::kWeights, false) == Types{0, 3});
  // The buffer's own type bits rule: without the window, uploads go to host memory.
  CHECK(rill::vk::memory_type_candidates(discrete, 0b0111u, PoolKind::kUploads, false) == Types{1, 2});
  CHECK(rill::vk::memory_type_candidates(discrete, 0b0001u, PoolKind::kUploads, false).empty());
  // AMD's device-coherent types (deviceCoherentMemory, which rill does not enable) and protected
  // memory are never taken, though they carry the flags a pool asks for.
  constexpr VkMemoryPropertyFlags kAmdCoherent =
      VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD | VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD;
  const auto amd = properties({kLocal, kLocal | kHost | kAmdCoherent, kHost, kLocal | kHost,
                               kLocal | VK_MEMORY_PROPERTY_PROTECTED_BIT, kHost | kAmdCoherent});
  CHECK(rill::vk::memory_type_candidates(amd, ~0u, PoolKind::kUploads, false) == Types{3, 2});
  CHECK(rill::vk::memory_type_candidates(amd, ~0u, PoolKind::kStaging, false) == Types{2, 3});
  CHECK(rill::vk::memory_type_candidates(amd, ~0u, PoolKind::kActivations, false) == Types{0, 3});
  CHECK(rill::vk::memory_type_candidates(amd, ~0u, PoolKind::kWeights, true) == Types{3});
  // Unified memory (lavapipe, integrated GPUs): every pool device-local and mapped.
  const auto unified = properties({kLocal | kHost | kCached});
  for (PoolKind pool : {PoolKind::kWeights, PoolKind::kActivations, PoolKind::kStaging, PoolKind::kUploads})
    CHECK(rill::vk::memory_type_candidates(unified, ~0u, pool, true) == Types{0});
}

// The shared block's size: whole granules that never pass the device's largest allocation, even a
// limit that is not a multiple of one (RADV reports 0xFFFFFFFC: rounded up, every block passed it).
TEST_CASE("shared memory blocks are whole granules within the device's largest allocation", "[memory]") {
  using rill::vk::shared_block_bytes;
  constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
  CHECK(shared_block_bytes(64 * kMiB, 0, 4 * kGiB) == 64 * kMiB);
  CHECK(shared_block_bytes(8 * kGiB, 0, 0xFFFFFFFCull) == 0xFFFFFF00ull);
  CHECK(shared_block_bytes(4 * kGiB, 0, 0xFFFFFFFCull) == 0xFFFFFF00ull);
  CHECK(shared_block_bytes(64 * kMiB, 256 * kMiB, 4 * kGiB) == 32 * kMiB);  // an eighth of the budget
  CHECK(shared_block_bytes(1000, 0, 4 * kGiB) == kMiB);                     // at least 1 MiB
  CHECK(shared_block_bytes(kMiB + 1, 0, 4 * kGiB) == kMiB + 256);
  CHECK(shared_block_bytes(64 * kMiB, 0, kMiB - 100) == kMiB - 256);  // a limit under 1 MiB still rules
}

GPU_TEST_CASE("impossible tensors get clear errors", "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  auto zero = ctx.tensor(rill::DType::kF32, {4, 0, 2}, "z");
  CHECK(zero.status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(ctx.tensor(rill::DType::kF32, {}, "scalar").status().code() == rill::StatusCode::kInvalidArgument);
  auto overflow = ctx.tensor(rill::DType::kF32, {1ll << 40, 1ll << 30}, "huge");
  CHECK(overflow.status().code() == rill::StatusCode::kOutOfRange);
  const uint64_t too_big = ctx.device().caps.max_allocation_bytes + 1;
  auto over = ctx.tensor(rill::DType::kU8, {static_cast<int64_t>(too_big)}, "over");
  CHECK(over.status().code() == rill::StatusCode::kOutOfRange);
  CHECK(over.status().message().find("maxMemoryAllocationSize") != std::string::npos);
  CHECK(over.status().message().find("'over'") != std::string::npos);
}

GPU_TEST_CASE("binding a tensor larger than maxStorageBufferRange is refused", "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  const uint64_t range = ctx.device().caps.max_storage_buffer_range;
  if (range >= ctx.device().caps.max_allocation_bytes) {
    WARN("device binds every allocatable size; nothing to check here");
    return;
  }
  auto big = ctx.tensor(rill::DType::kU8, {static_cast<int64_t>(range + 256)}, "big");
  REQUIRE(big.is_ok());
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  const rill::Status s = seq->dispatch(rill_test::fill_dispatch(*big, 16, 1.0f));
  CHECK(s.code() == rill::StatusCode::kOutOfRange);
  CHECK(s.message().find("maxStorageBufferRange") != std::string::npos);
}

GPU_TEST_CASE("reshaped views share memory, keep it alive and order GPU work through either", "[memory][gpu]") {
  auto ctx = rill_test::make_context();
  auto t = ctx.tensor(rill::DType::kF32, {2, 3, 4}, "base");
  REQUIRE(t.is_ok());
  CHECK(t->reshaped({4, 5}).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(t->reshaped({0, 24}).status().code() == rill::StatusCode::kInvalidArgument);
  // No dimensions (a 0-d shape): refused as at creation, so ops never read the last of none.
  auto one = ctx.tensor(rill::DType::kF32, {1});
  CHECK(one->reshaped({}).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(rill::Tensor().reshaped({1}).status().code() == rill::StatusCode::kInvalidArgument);
  auto view = t->reshaped({6, 4});
  REQUIRE(view.is_ok());
  CHECK(view->shape() == std::vector<int64_t>{6, 4});
  CHECK(placement(*view).block == placement(*t).block);
  CHECK(placement(*view).offset == placement(*t).offset);
  // A GPU write through the view, then a read through the base: the recorder orders them.
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  REQUIRE(seq->dispatch(rill_test::fill_dispatch(*view, 24, 3.5f)).is_ok());
  auto id = seq->download(*t);
  REQUIRE(id.is_ok());
  REQUIRE(seq->run().is_ok());
  auto written = seq->read_floats(*id);
  REQUIRE(written.is_ok());
  for (float v : *written) CHECK(v == 3.5f);
  // The base goes first; the view keeps the memory until it goes too.
  const uint64_t used = ctx.memory_stats().used_bytes;
  *t = rill::Tensor();
  CHECK(ctx.memory_stats().used_bytes == used);
  auto back = ctx.download_floats(*view);
  REQUIRE(back.is_ok());
  CHECK(back->at(23) == 3.5f);
}

GPU_TEST_CASE("a context's device memory budget refuses blocks past it, by name, and nothing else", "[memory][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.device_memory_budget = 16ull << 20;  // shared blocks of 2 MiB then
  auto ctx = rill_test::make_context(options);
  std::vector<rill::Tensor> held;
  rill::Status refused;
  for (int i = 0; i < 64 && refused.is_ok(); ++i) {
    auto t = ctx.tensor(rill::DType::kF32, {300000}, "piece");  // 1.2 MB: shared blocks
    if (t.is_ok())
      held.push_back(std::move(t).value());
    else
      refused = t.status();
  }
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == rill::StatusCode::kResourceExhausted);
  CHECK_THAT(refused.message(), Catch::Contains("device memory budget of 16.0 MiB"));
  CHECK(ctx.memory_stats().reserved_bytes <= options.device_memory_budget);
  CHECK(held.size() >= 10);  // the budget, not the blocks, was the limit
  // One tensor past the budget on its own is refused the same way; what is held stays usable.
  CHECK(ctx.tensor(rill::DType::kU8, {32 << 20}).status().code() == rill::StatusCode::kResourceExhausted);
  const std::vector<float> ones(300000, 1.0f);
  REQUIRE(ctx.upload_floats(held.front(), ones).is_ok());  // staging: outside the budget
  CHECK(ctx.download_floats(held.front()).value() == ones);
  const rill::MemoryStats after = ctx.memory_stats();
  CHECK(after.reserved_bytes - after.staging_bytes <= options.device_memory_budget);
  // Freed memory can be taken again.
  held.clear();
  CHECK(ctx.tensor(rill::DType::kU8, {8 << 20}).is_ok());
}

// A tensor dropped while the GPU still uses it is freed when that work finishes: an allocation
// that finds the budget spent meanwhile waits for the work and takes the memory, rather than fail
// while nothing the application holds needs it.
GPU_TEST_CASE("an allocation past the budget waits for memory that work in flight still holds", "[memory][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.device_memory_budget = 16ull << 20;
  auto ctx = rill_test::make_context(options);
  {
    auto first = ctx.tensor(rill::DType::kF32, {int64_t(9) << 18}, "first").value();  // 9 MiB: a dedicated block
    auto seq = ctx.sequence().value();
    REQUIRE(seq.fill_zero(first).is_ok());
    REQUIRE(seq.submit().is_ok());  // no wait: the tensor and the sequence go while it may run
  }
  auto second = ctx.tensor(rill::DType::kF32, {int64_t(9) << 18}, "second");
  INFO(second.status().to_string());
  REQUIRE(second.is_ok());
  CHECK(ctx.memory_stats().reserved_bytes - ctx.memory_stats().staging_bytes <= options.device_memory_budget);
  // Memory the application still holds is not waited for: the budget is then spent, and says so.
  CHECK(ctx.tensor(rill::DType::kF32, {int64_t(9) << 18}, "third").status().code() ==
        rill::StatusCode::kResourceExhausted);
}

TEST_CASE("a device memory budget from the environment is read as bytes or K, M, G", "[memory]") {
  for (const char* bad : {"lots", "12Q", "-5", "99999999999G"}) {
    const rill_test::ScopedEnv budget("RILL_DEVICE_MEMORY_BUDGET", bad);
    const auto ctx = rill::Context::create();
    INFO(bad);
    CHECK(ctx.status().code() == rill::StatusCode::kInvalidArgument);
    CHECK_THAT(ctx.status().message(), Catch::Contains("RILL_DEVICE_MEMORY_BUDGET"));
  }
  auto ctx = [] {
    const rill_test::ScopedEnv budget("RILL_DEVICE_MEMORY_BUDGET", "2M");
    return rill::Context::create();
  }();
  REQUIRE(ctx.is_ok());
  CHECK(ctx->tensor(rill::DType::kU8, {3 << 20}).status().code() == rill::StatusCode::kResourceExhausted);
  CHECK(ctx->tensor(rill::DType::kU8, {1 << 19}).is_ok());
}
