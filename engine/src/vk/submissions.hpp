// Queue submissions, each tagged with a serial and a fence, and the retire queue: work that must
// wait until the GPU is done with a resource (freeing memory, destroying command buffers) is
// queued with the serial of the last submission that used it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/deliberate_leak.hpp"
#include "core/profiler.hpp"
#include "vk/device.hpp"
#include "vk/faults.hpp"
#include "vk/unique.hpp"

namespace rill::vk {

class Submissions {
 public:
  Submissions(Device& device, FaultInjector& faults, detail::Profiler& profiler)
      : device_(device), faults_(faults), profiler_(profiler) {}
  ~Submissions();  // waits for the device and runs every retiree
  Submissions(const Submissions&) = delete;
  Submissions& operator=(const Submissions&) = delete;

  // Submits the command buffers (in order, as one batch); returns the batch's serial.
  Result<uint64_t> submit(std::span<const VkCommandBuffer> command_buffers);
  // Waits for the submission `serial`: polls its fence for up to the spin time (set_spin_us), then
  // sleeps on it.
  Status wait(uint64_t serial);
  void set_spin_us(uint32_t us) { spin_us_ = us; }
  uint32_t spin_us() const { return spin_us_; }
  // The longest one wait (or drain) may take: past it wait() returns DeadlineExceeded with the
  // work still in flight and gives up (below), and drain() leaks. 0: no limit.
  void set_timeout_ms(uint32_t ms) { timeout_ms_ = ms; }
  uint32_t timeout_ms() const { return timeout_ms_; }
  // A wait passed the timeout: every later submit and wait returns given_up_status(), as after a
  // device loss, and drain() only looks whether the work has finished before it leaks.
  bool given_up() const { return given_up_flag_; }
  Status given_up_status() const;
  Status wait_all() { return wait(last_submitted_); }
  // Collects finished submissions and runs their retirees; cheap, never blocks.
  Status poll();

  uint64_t completed() const { return completed_; }
  uint64_t last_submitted() const { return last_submitted_; }
  // Work that waits for the GPU; it may own move-only resources (Unique handles), which it
  // destroys when it has run.
  class Retiree {
   public:
    // `fn` is moved from only once its home is allocated: where that throws, the caller still has it.
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Retiree>>>
    explicit Retiree(F&& fn) : impl_(std::make_unique<Model<std::decay_t<F>>>(std::forward<F>(fn))) {}
    void operator()() { impl_->run(); }

   private:
    struct Concept {
      virtual ~Concept() = default;
      virtual void run() = 0;
    };
    template <typename F>
    struct Model final : Concept {
      explicit Model(F f) : fn(std::move(f)) {}
      void run() override { fn(); }
      F fn;
    };
    std::unique_ptr<Concept> impl_;
  };
  // Runs `fn` once the submission `serial` has completed (at once if it has). Never throws: it is
  // called from destructors. With no host memory to queue `fn`, it waits for `serial` and runs `fn`;
  // where that wait fails, what `fn` owns is leaked, never freed under the GPU.
  template <typename F>
  void retire(uint64_t serial, F fn) noexcept;
  bool has_retirees() const { return !retirees_.empty(); }
  // The latest submission a retiree waits for (0: none).
  uint64_t last_retiree_serial() const;
  // Runs every pending retiree after waiting for rill's submissions (teardown, device loss; a lost
  // device is waited on too); where that wait neither succeeds nor reports the device lost (a
  // timeout, an error), leaks them instead (the GPU may still use their resources).
  void drain();
  // drain()'s wait neither succeeded nor reported the device lost: what the GPU may still use was
  // leaked, and the owner should leak the rest (memory blocks, pools, pipelines) too.
  bool leaked() const { return leaked_; }

 private:
  struct InFlight {
    uint64_t serial;
    UniqueFence fence;
  };
  void run_retirees();
  bool wait_succeeded(uint64_t serial) noexcept;  // wait(), false where it failed or ran out of memory
  uint64_t timeout_ns() const;  // for vkWaitForFences

  Device& device_;
  FaultInjector& faults_;
  detail::Profiler& profiler_;
  uint64_t last_submitted_ = 0;
  uint64_t completed_ = 0;
  uint32_t spin_us_ = 0;
  uint32_t timeout_ms_ = 0;
  bool leaked_ = false;
  bool given_up_flag_ = false;  // set before the message: giving up must not need memory
  std::string given_up_;        // which wait passed the timeout (empty where no memory was left to say)
  std::deque<InFlight> in_flight_;
  std::vector<UniqueFence> free_fences_;  // reset, ready for the next submission
  std::deque<std::pair<uint64_t, Retiree>> retirees_;
};

template <typename F>
void Submissions::retire(uint64_t serial, F fn) noexcept {
  if (serial <= completed_) {
    fn();
    return;
  }
  std::optional<Retiree> retiree;
  try {
    retiree.emplace(std::move(fn));
    retirees_.emplace_back(serial, std::move(*retiree));
    return;
  } catch (const std::bad_alloc&) {
  }
  if (wait_succeeded(serial)) {
    if (retiree)
      (*retiree)();
    else
      fn();
    return;
  }
  leaked_ = true;
  if (retiree)
    detail::leak_without_allocating(std::move(*retiree));
  else
    detail::leak_without_allocating(std::move(fn));
}

}  // namespace rill::vk
