// What a CPU driver's speed depends on that its name does not tell: the host's threads. lavapipe
// runs a thread per processor the process may use (its affinity mask: under `taskset -c 0` Mesa
// 22.3's lavapipe started no llvmpipe-N threads, on two processors two) or LP_NUM_THREADS, and
// reports the same "llvmpipe (LLVM 15, 256 bits)" on 2 cores and on 64, so what is measured on one
// (peaks, tuned plans) is kept apart from the other.
#pragma once

#include <cstdlib>
#include <string>

#include "platform/host_resources.hpp"
#include "rill/device.hpp"

namespace rill::detail {

// "threads8" (8 usable processors), or "threads8-lp4" under LP_NUM_THREADS=4; empty for a device that is not a CPU
// driver.
inline std::string cpu_driver_threads(const DeviceInfo& d) {
  if (d.type != DeviceType::kCpu) return "";
  const char* lp = std::getenv("LP_NUM_THREADS");
  return "threads" + std::to_string(platform::usable_cpus()) + (lp && *lp ? "-lp" + std::to_string(std::atoi(lp)) : "");
}

}  // namespace rill::detail
