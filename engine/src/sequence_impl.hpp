// Internal state of a Sequence: one command buffer, the descriptor sets and staging memory it
// uses, the hazard tracker that places barriers, and optional timestamp queries.
#pragma once

#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "context_impl.hpp"
#include "core/host_memory_guard.hpp"
#include "hazard_tracker.hpp"
#include "rill/sequence.hpp"
#include "vk/unique.hpp"

namespace rill::detail {

class SequenceImpl {
 public:
  SequenceImpl(std::shared_ptr<ContextImpl> context, SequenceOptions opts)
      : ctx(std::move(context)), options(std::move(opts)) {}
  ~SequenceImpl();

  Status begin();
  Status record_dispatch(const Dispatch& d);
  enum class Transfer { kCopy, kUpload, kDownload, kZero };
  // kCopy: src -> dst; kUpload: bytes -> dst; kDownload: src -> new staging; kZero: dst = 0.
  Status record_transfer(Transfer kind, const Tensor* src, const Tensor* dst, std::span<const uint8_t> bytes,
                         DownloadId* download);
  // Runs a recording call; one that runs out of host memory part way may have left a command half
  // recorded (a barrier without its dispatch, a tensor used but not referenced), so the sequence is
  // broken, never submitted with it.
  template <typename F>
  Status recording_guarded(F&& record) {
    try {
      return record();
    } catch (const std::bad_alloc&) {
      Status failed = out_of_host_memory("sequence: recording (make a new sequence)");  // moved out
      break_with(failed);
      return failed;
    }
  }
  // Commands recorded so far (dispatches, transfers, barriers): an op that fails after it recorded
  // some has left part of itself in the sequence.
  uint64_t commands_recorded() const { return uint64_t(stats.dispatches) + stats.copies + stats.barriers; }
  // Breaks the sequence: finish() and submit() refuse it from now on, with `why` where there is the
  // memory to keep it (a copy allocates; without it they refuse with a message of their own).
  void break_with(const Status& why) noexcept {
    state = State::kBroken;
    try {
      broken = why;
    } catch (const std::bad_alloc&) {
    }
  }
  Status finish();
  Status submit(uint32_t times);
  Status wait();
  Status add_gpu_events();  // the last submission's dispatches as GPU events of the profile
  // GPU times of the last completed submission's last replay (needs timestamps).
  Result<std::vector<DispatchTiming>> read_timings() const;

  static constexpr uint32_t kQueriesPerPool = 256;  // timestamp queries per query pool

  std::shared_ptr<ContextImpl> ctx;
  SequenceOptions options;
  enum class State { kRecording, kFinished, kBroken } state = State::kRecording;
  // Between a successful vkBeginCommandBuffer and vkEndCommandBuffer: a recording to end before the
  // command buffer is destroyed (a broken sequence's too).
  bool cb_recording = false;
  Status broken;  // why recording stopped (a failed call after commands were recorded); set once broken

  // The Vulkan objects of the recording, destroyed together (in reverse order of declaration)
  // once the GPU has finished the last submission that used them.
  struct VulkanObjects {
    vk::UniqueCommandPool pool;
    vk::UniqueCommandBuffer cb;
    std::vector<vk::UniqueDescriptorPool> descriptor_pools;
    std::vector<vk::UniqueQueryPool> query_pools;
  } objects;
  VkCommandBuffer cb() const { return objects.cb.get(); }
  // What the last descriptor pool has left: sets, storage-buffer and texel-buffer descriptors.
  struct PoolRoom {
    uint32_t sets = 0, storage = 0, texel = 0;
  } pool_room;
  uint32_t queries_used = 0;  // in the last query pool
  std::vector<vk::Allocation> staging;
  struct Download {
    vk::Allocation staging;
    uint64_t bytes;
    DType dtype;
  };
  std::vector<Download> downloads;
  std::vector<std::shared_ptr<TensorStorage>> referenced;
  // Op workspaces (scratch for intermediate results), alive as long as the recording; reused by
  // later ops of the sequence (the hazard tracker orders the reuse).
  std::deque<Tensor> workspaces;  // a deque: pointers to earlier ones stay valid
  std::vector<DispatchTiming> timed;  // one per timestamped dispatch, in order
  HazardTracker hazards;
  bool auto_barriers = true;  // tests turn this off to prove the validation layer catches hazards
  SequenceStats stats;
  uint64_t last_serial = 0;
  uint64_t timings_serial = 0;
  double submit_us = 0.0;         // profiler time of the last submit
  uint32_t submitted_times = 0;   // replays in the last submit
  uint64_t profiled_serial = 0;   // last submission whose GPU times went to the profiler

 private:
  // Makes room in the last descriptor pool for one set of `storage` and `texel` descriptors (a new
  // pool when it lacks it).
  Status ensure_descriptor_pool(uint32_t storage, uint32_t texel);
  Status insert_barrier_if_needed(const std::vector<HazardTracker::Access>& accesses);
  Result<uint32_t> next_timestamp_pair(VkQueryPool* pool);
  void reference(const std::shared_ptr<TensorStorage>& t);
};

}  // namespace rill::detail
