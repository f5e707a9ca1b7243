// physical_memory_bytes on POSIX systems (Linux, Android, macOS).
#include <unistd.h>

#include "platform/host_memory.hpp"

namespace rill::platform {

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

}  // namespace rill::platform
