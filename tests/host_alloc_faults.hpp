// Host allocation failure for tests: the test binary replaces the global operator new, and a
// HostAllocFailure makes one allocation of the calling thread throw std::bad_alloc, as running out
// of host memory would. The fault-injection drills of device resources (test_fault_injection.cpp)
// have a twin for host memory (test_host_alloc_faults.cpp): no exception crosses the API, every
// failure is ResourceExhausted, and what the call was to change stays usable.
#pragma once

#include <cstdint>

namespace rill_test {

// While it lives, the n-th counted allocation of the calling thread fails (n >= 1), and with
// kFromThenOn every later one too. Counted are
// allocations whose call stack reaches no shared library but the C and C++ runtimes: rill's own,
// directly or through libstdc++. Those of the validation layer or of the driver's shader compiler
// (LLVM, built without exceptions) are not the code under test, and an exception thrown inside
// them would cross C frames. Not nestable, one thread at a time.
// kOnce: the n-th allocation fails and the next ones succeed. kFromThenOn: the n-th and every one
// after it fail, as they would while memory stays exhausted, so that code handling the first
// failure (its message, its clean-up) runs without memory too.
enum class HostAllocMode { kOnce, kFromThenOn };

class HostAllocFailure {
 public:
  explicit HostAllocFailure(uint64_t n, HostAllocMode mode = HostAllocMode::kOnce);
  ~HostAllocFailure();
  HostAllocFailure(const HostAllocFailure&) = delete;
  HostAllocFailure& operator=(const HostAllocFailure&) = delete;

  uint64_t counted() const;  // allocations counted since it was made
  bool fired() const;        // the n-th came and failed
};

}  // namespace rill_test
