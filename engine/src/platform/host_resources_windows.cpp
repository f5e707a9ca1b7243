// The host's memory and processors on Windows.
#include <windows.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <thread>

#include "platform/host_resources.hpp"

namespace rill::platform {

uint64_t physical_memory_bytes() {
  MEMORYSTATUSEX status{};
  status.dwLength = sizeof status;
  return GlobalMemoryStatusEx(&status) ? uint64_t(status.ullTotalPhys) : 0;
}

unsigned usable_cpus() {
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  // The process's affinity mask (within its processor group).
  DWORD_PTR process = 0, system = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) && process != 0)
    return std::clamp(unsigned(std::popcount(uint64_t(process))), 1u, all);
  return all;
}

}  // namespace rill::platform
