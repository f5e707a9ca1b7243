// Fence-per-submission tracking (works on Vulkan 1.1 drivers without timeline semaphores).
#include "vk/submissions.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <string>

#include "core/deliberate_leak.hpp"
#include "core/log.hpp"

namespace rill::vk {

namespace {

std::string timeout_text(uint32_t ms) {
  return "the GPU wait timeout of " + std::to_string(ms) +
         " ms (ContextOptions::gpu_wait_timeout_ms or RILL_GPU_WAIT_TIMEOUT)";
}

}  // namespace

Submissions::~Submissions() { drain(); }

uint64_t Submissions::timeout_ns() const { return timeout_ms_ == 0 ? UINT64_MAX : uint64_t(timeout_ms_) * 1000000; }

void Submissions::drain() {
  // It runs in the destructor: nothing here may throw, so nothing allocates on the way.
  // rill's own fences, not vkDeviceWaitIdle: on an application's device (Context::wrap) that
  // would need every queue of the device, the application's too, kept still while it waits. The
  // last one is enough: a fence of vkQueueSubmit signals after every earlier submission's work.
  // A device reported lost is waited on too: a really lost one returns in finite time (VK_SUCCESS
  // or VK_ERROR_DEVICE_LOST), and one call's report need not mean that work queued before has
  // stopped (the fault drills latch a loss on a working device, whose queue may still be running
  // what would be freed under it: on lavapipe, host memory). Only those two results say the work
  // is over; any other leaves it leaked, lost device or not.
  const VkFence last = in_flight_.empty() ? VK_NULL_HANDLE : in_flight_.back().fence.get();
  const VkResult r =
      last == VK_NULL_HANDLE ? VK_SUCCESS : faults_.run([&] {  // an injection point: tests reach the leaking path below
        return device_.fn().vkWaitForFences(device_.handle(), 1, &last, VK_TRUE, given_up() ? 0 : timeout_ns());
      });
  const bool finished = r == VK_SUCCESS || r == VK_ERROR_DEVICE_LOST;
  if (r != VK_SUCCESS) {
    try {
      const Status failed =
          r == VK_TIMEOUT
              ? deadline_exceeded("rill's work on the GPU did not finish within " + timeout_text(timeout_ms_))
              : device_.check(r, "vkWaitForFences");  // marks a lost device first
      if (!finished)
        log_message(MessageSeverity::kWarning, failed.to_string() + "; " + std::to_string(retirees_.size()) +
                                                   " resources of unfinished work are leaked, not freed in use");
    } catch (const std::bad_alloc&) {  // the warning is lost, not what follows
    }
  }
  if (!finished) {
    // The GPU may still use what the retirees free and the fences: leaked, never freed under it.
    // Without memory for the lists' new homes (a failed allocation leaves them where they are),
    // each goes to the static arena.
    try {
      detail::leak_deliberately(std::make_unique<std::deque<InFlight>>(std::move(in_flight_)));
    } catch (const std::bad_alloc&) {
      for (InFlight& f : in_flight_) detail::leak_without_allocating(std::move(f.fence));
    }
    try {
      detail::leak_deliberately(std::make_unique<std::deque<std::pair<uint64_t, Retiree>>>(std::move(retirees_)));
    } catch (const std::bad_alloc&) {
      for (auto& [serial, retiree] : retirees_) detail::leak_without_allocating(std::move(retiree));
    }
    in_flight_.clear();  // moved from: nothing left to destroy
    retirees_.clear();
    completed_ = last_submitted_;
    leaked_ = true;
    return;
  }
  // Finished, or on a lost device that says so: nothing runs any more, everything is released.
  in_flight_.clear();  // their fences may be signalled, not reset: destroyed
  completed_ = last_submitted_;
  while (!retirees_.empty()) run_retirees();
}

Status Submissions::given_up_status() const {
  return deadline_exceeded(given_up_ +
                           "; the context is given up (its work may still run): every call that needs the GPU "
                           "returns this, so destroy the context (what unfinished work uses is then leaked, "
                           "not freed in use) and create another");
}

Result<uint64_t> Submissions::submit(std::span<const VkCommandBuffer> command_buffers) {
  if (device_.lost()) return device_.lost_status();
  if (given_up()) return given_up_status();
  const auto& fn = device_.fn();
  UniqueFence fence;
  if (!free_fences_.empty()) {
    fence = std::move(free_fences_.back());
    free_fences_.pop_back();
  } else {
    VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    RILL_ASSIGN_OR_RETURN(fence, create_unique<UniqueFence>(device_, faults_, "vkCreateFence", [&](VkFence* out) {
                            return fn.vkCreateFence(device_.handle(), &info, nullptr, out);
                          }));
  }
  const double start_us = profiler_.enabled() ? profiler_.now_us() : 0.0;
  // Tracked before it is submitted: growing the list may run out of host memory, and a fence the
  // GPU will signal must never go untracked (nor its serial unreturned).
  in_flight_.push_back({last_submitted_ + 1, std::move(fence)});
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = static_cast<uint32_t>(command_buffers.size());
  submit.pCommandBuffers = command_buffers.data();
  VkResult r = fn.vkQueueSubmit(device_.queue(), 1, &submit, in_flight_.back().fence.get());
  if (r != VK_SUCCESS) {
    UniqueFence unused = std::move(in_flight_.back().fence);  // unsignalled: a failed submit queues nothing
    in_flight_.pop_back();
    try {
      free_fences_.push_back(std::move(unused));
    } catch (const std::bad_alloc&) {  // destroyed instead
    }
    return device_.check(r, "vkQueueSubmit");
  }
  ++last_submitted_;
  profiler_.add_host_after(
      [&] { return "vkQueueSubmit (" + std::to_string(command_buffers.size()) + " command buffers)"; }, "submit",
      start_us);
  return last_submitted_;
}

Status Submissions::poll() {
  const auto& fn = device_.fn();
  while (!in_flight_.empty()) {
    VkResult r = fn.vkGetFenceStatus(device_.handle(), in_flight_.front().fence.get());
    if (r == VK_NOT_READY) break;
    if (r != VK_SUCCESS) return device_.check(r, "vkGetFenceStatus");
    UniqueFence fence = std::move(in_flight_.front().fence);
    completed_ = in_flight_.front().serial;
    in_flight_.pop_front();
    const VkFence handle = fence.get();
    // A fence that cannot be reset is destroyed here, not reused signalled.
    RILL_DEVICE_RETURN_IF_ERROR(device_, fn.vkResetFences(device_.handle(), 1, &handle));
    free_fences_.push_back(std::move(fence));
  }
  run_retirees();
  return Status::ok();
}

Status Submissions::wait(uint64_t serial) {
  if (device_.lost()) return device_.lost_status();
  if (given_up()) return given_up_status();
  const auto& fn = device_.fn();
  const bool waits = completed_ < serial && !in_flight_.empty();
  const double start_us = waits && profiler_.enabled() ? profiler_.now_us() : 0.0;
  // A fault-injection point, once per wait with work to wait for, whether it then polls or sleeps
  // (a polled fence never reached the sleeping wait's point): a failed wait must not free what the
  // GPU still uses.
  if (waits)
    if (VkResult r = faults_.run([] { return VK_SUCCESS; }); r != VK_SUCCESS)
      return device_.check(r, "vkWaitForFences");
  // Polling first: a sleeping wait wakes well after the fence signals (kernel_plan.hpp's
  // wait_spin_us says when it is worth a host core).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  // One deadline for the whole call, however many fences it sleeps on; the spin stays within it.
  const auto deadline = start + std::chrono::milliseconds(timeout_ms_);
  auto spin_end = start + std::chrono::microseconds(spin_us_);
  if (timeout_ms_ != 0) spin_end = std::min(spin_end, deadline);
  while (spin_us_ != 0 && completed_ < serial && !in_flight_.empty()) {
    RILL_RETURN_IF_ERROR(poll());
    if (Clock::now() >= spin_end) break;
  }
  while (completed_ < serial && !in_flight_.empty()) {
    const VkFence fence = in_flight_.front().fence.get();
    uint64_t wait_ns = UINT64_MAX;
    if (timeout_ms_ != 0)
      wait_ns = uint64_t(
          std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count()));
    VkResult r = fn.vkWaitForFences(device_.handle(), 1, &fence, VK_TRUE, wait_ns);
    if (r == VK_TIMEOUT) {
      // Given up for good, as a lost device is: the callers' state (a session's position, a
      // trainer's step, a restore's half-landed uploads) assumes a failed wait ends the work.
      given_up_flag_ = true;
      try {
        given_up_ = "submission " + std::to_string(serial) + " did not finish within " + timeout_text(timeout_ms_);
      } catch (const std::bad_alloc&) {  // given up all the same; the status says less
      }
      (void)poll();  // what did finish is collected
      return given_up_status();
    }
    if (r != VK_SUCCESS) return device_.check(r, "vkWaitForFences");
    RILL_RETURN_IF_ERROR(poll());
  }
  if (waits) profiler_.add_host_after([] { return std::string("wait for GPU"); }, "wait", start_us);
  return poll();
}

bool Submissions::wait_succeeded(uint64_t serial) noexcept {
  try {
    return wait(serial).is_ok();
  } catch (const std::bad_alloc&) {  // a failed wait's message
    return false;
  }
}

uint64_t Submissions::last_retiree_serial() const {
  uint64_t last = 0;
  for (const auto& [serial, fn] : retirees_) last = std::max(last, serial);
  return last;
}

void Submissions::run_retirees() {
  // One at a time, moved out before it runs: nothing here allocates (drain() runs in a destructor),
  // and a retiree may queue another (for a later serial: retire() runs a finished one at once).
  for (size_t i = 0; i < retirees_.size();) {
    if (retirees_[i].first > completed_) {
      ++i;
      continue;
    }
    Retiree ready = std::move(retirees_[i].second);
    retirees_.erase(retirees_.begin() + std::ptrdiff_t(i));
    ready();
  }
}

}  // namespace rill::vk
