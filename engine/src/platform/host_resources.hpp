// The host's memory and processors: for refusing up front what cannot fit (rather than letting an
// overcommitting kernel hand out pages until its out-of-memory killer ends the process), and for
// sizing host thread pools.
#pragma once

#include <cstdint>

namespace rill::platform {

// Physical memory of the machine in bytes; 0 when the system does not say.
uint64_t physical_memory_bytes();

// The processors this process may run on, at least 1: in a container or under `taskset` fewer
// than the machine has (std::thread::hardware_concurrency counts them all), and more threads than
// that only take turns.
unsigned usable_cpus();

}  // namespace rill::platform
