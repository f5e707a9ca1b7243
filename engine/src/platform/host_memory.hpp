// The host's memory, for refusing up front what cannot fit (rather than letting an overcommitting
// kernel hand out pages until its out-of-memory killer ends the process).
#pragma once

#include <cstdint>

namespace rill::platform {

// Physical memory of the machine in bytes; 0 when the system does not say.
uint64_t physical_memory_bytes();

}  // namespace rill::platform
