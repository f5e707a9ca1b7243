// What a CPU driver's speed depends on that its name does not tell: the host's threads. lavapipe
// runs one thread per core (or LP_NUM_THREADS), and reports the same "llvmpipe (LLVM 15, 256 bits)"
// on 2 cores and on 64, so what is measured on one (peaks, tuned plans) is kept apart from the other.
#pragma once

#include <cstdlib>
#include <string>
#include <thread>

#include "rill/device.hpp"

namespace rill::detail {

// "threads8", or "threads8-lp4" under LP_NUM_THREADS=4; empty for a device that is not a CPU driver.
inline std::string cpu_driver_threads(const DeviceInfo& d) {
  if (d.type != DeviceType::kCpu) return "";
  const char* lp = std::getenv("LP_NUM_THREADS");
  return "threads" + std::to_string(std::thread::hardware_concurrency()) +
         (lp && *lp ? "-lp" + std::to_string(std::atoi(lp)) : "");
}

}  // namespace rill::detail
