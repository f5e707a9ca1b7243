// The host's memory and processors on POSIX systems (Linux, Android, macOS).
#if defined(__linux__)
#include <sched.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "platform/host_resources.hpp"

namespace rill::platform {

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

unsigned usable_cpus() {
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
#if defined(__linux__)
  // The affinity mask, of up to CPU_SETSIZE (1024) processors; on a larger machine the call fails.
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) return std::clamp(unsigned(CPU_COUNT(&mask)), 1u, all);
#endif
  return all;
}

}  // namespace rill::platform
