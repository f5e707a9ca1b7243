// physical_memory_bytes on Windows.
#include <windows.h>

#include "platform/host_memory.hpp"

namespace rill::platform {

uint64_t physical_memory_bytes() {
  MEMORYSTATUSEX status{};
  status.dwLength = sizeof status;
  return GlobalMemoryStatusEx(&status) ? uint64_t(status.ullTotalPhys) : 0;
}

}  // namespace rill::platform
