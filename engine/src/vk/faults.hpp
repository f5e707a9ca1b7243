// Fault injection for tests: makes the N-th resource-creating call (or fence wait) of a context
// fail as if the driver ran out of memory, so every error path can be exercised one at a time.
#pragma once

#include <cstdint>

#include "vk/vk_common.hpp"

namespace rill::vk {

class FaultInjector {
 public:
  // Fail the `n`-th call from now (1-based); 0 turns injection off.
  void fail_nth(uint64_t n) {
    fail_at_ = n == 0 ? 0 : seen_ + n;
  }
  uint64_t calls_seen() const { return seen_; }
  // The call that was made to fail last (0: none yet), to tell an injected failure from a real one.
  uint64_t last_injected() const { return injected_; }

  // Returns VK_ERROR_OUT_OF_DEVICE_MEMORY for the chosen call, else the real call's result.
  template <typename Call>
  VkResult run(Call&& call) {
    ++seen_;
    if (fail_at_ != 0 && seen_ == fail_at_) {
      injected_ = seen_;
      return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    }
    return call();
  }

 private:
  uint64_t seen_ = 0;
  uint64_t fail_at_ = 0;
  uint64_t injected_ = 0;
};

}  // namespace rill::vk
