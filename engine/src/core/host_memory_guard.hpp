// The C++ API's promise that no exception crosses it (status.hpp), kept where running out of host
// memory can throw from deep inside a call: a message's string, a file's header, a vector of
// records. A call that changes an object is guarded where a failure part way leaves it usable: a
// trainer catches up with the device's step on its next call, a grid's checkpoint load puts back
// what it replaced, a sequence whose recording ran out is broken. The language model's session
// keeps its own guard, which also marks the session spent. tests/test_host_alloc_faults.cpp fails
// each allocation of these calls in turn.
#pragma once

#include <new>
#include <string>

#include "rill/status.hpp"

namespace rill::detail {

// ResourceExhausted with the message `make_message()` builds; with no memory left even for that, one
// without a message (an empty string allocates nothing), never an exception. For the handlers of a
// failed allocation: memory that ran out once is likely still short.
template <typename F>
Status resource_exhausted_noexcept(F&& make_message) noexcept {
  try {
    return resource_exhausted(make_message());
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted, std::string());
  }
}

// ResourceExhausted naming `op`, never an exception.
inline Status out_of_host_memory(const char* op) noexcept {
  return resource_exhausted_noexcept([op] { return std::string(op) + ": out of host memory"; });
}

// Runs `call` (returning a Status or a Result), turning std::bad_alloc into ResourceExhausted
// naming `op`.
template <typename F>
auto host_memory_guarded(const char* op, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    return out_of_host_memory(op);
  }
}

}  // namespace rill::detail
