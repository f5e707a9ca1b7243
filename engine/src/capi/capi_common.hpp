// Shared pieces of the C API's translation units: the handle types and the status plumbing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "rill/context.hpp"
#include "rill/rill.h"

struct rill_context {
  rill::Context context;
};

namespace rill::capi {

// Fills a caller's options struct of `size` bytes (the sizeof of the caller's header: the _init
// macros pass it) with `defaults`: never more bytes than the caller has, struct_size what was filled.
// A program built against an older header, whose struct is shorter, keeps its stack intact.
template <typename T>
void init_sized(T* out, uint32_t size, T defaults) noexcept {
  if (out == nullptr || size < sizeof(uint32_t)) return;
  const uint32_t n = std::min<uint32_t>(size, uint32_t(sizeof(T)));
  defaults.struct_size = n;
  std::memcpy(static_cast<void*>(out), &defaults, n);
}

// The size of 0.1's output structs: a _sized call with less is refused, and the entry points of
// 0.1's names (called by programs built against 0.1) fill this much. Fields added later go after.
inline constexpr uint32_t kLmInfo01Bytes = uint32_t(offsetof(rill_lm_info, weight_bytes) + sizeof(uint64_t));
inline constexpr uint32_t kIclEval01Bytes = uint32_t(offsetof(rill_icl_eval, tunedrr) + sizeof(double));

// Records the message for rill_last_error() and returns the code. Never throws: without host
// memory for the message, rill_last_error() says that instead.
rill_status fail(rill_status code, std::string_view message) noexcept;
// The same for "function: what", the message built without throwing.
rill_status fail(rill_status code, const char* function, const char* what) noexcept;
rill_status from_status(const rill::Status& s) noexcept;
// Makes the last error message start with `function` ("rill_tokenizer_encode: tokenizer: ..."):
// the engine's messages name its part, a C caller wants the call that failed.
void name_last_error(const char* function) noexcept;

// Live handles: each create registers the handle it returns, each destroy takes it back. A call
// with a handle that is not live, destroyed or never made by rill, is refused (and a second destroy
// does nothing) where the pointer alone would be a use after free; the handle's type is checked
// too, as freed memory may come back as a handle of another kind.
namespace handles {
void add(const void* handle, const void* kind);
bool live(const void* handle, const void* kind) noexcept;
bool take(const void* handle, const void* kind) noexcept;  // true if it was live
template <typename T>
const void* kind_of() {
  static char tag = 0;  // not const: identical constants may be folded into one address (ICF)
  return &tag;
}
}  // namespace handles

// The new handle, registered (on failure to register, nothing is kept and the exception goes on).
template <typename T>
T* make_handle(T* handle) {
  try {
    handles::add(handle, handles::kind_of<T>());
  } catch (...) {
    delete handle;
    throw;
  }
  return handle;
}
// Destroys a live handle; anything else (NULL, destroyed, foreign) is left alone.
template <typename T>
void destroy_handle(T* handle) noexcept {
  if (handle != nullptr && handles::take(handle, handles::kind_of<T>())) delete handle;
}
// NULL, destroyed or not a handle of this kind: the calls' argument checks refuse it.
template <typename T>
bool dead(const T* handle) noexcept {
  return handle == nullptr || !handles::live(handle, handles::kind_of<T>());
}

// Runs f (returning rill_status), turning anything thrown into a status: nothing escapes to C.
template <typename F>
rill_status guarded(const char* function, F&& f) noexcept {
  try {
    const rill_status s = f();
    if (s != RILL_OK) name_last_error(function);
    return s;
  } catch (const std::bad_alloc&) {
    return fail(RILL_RESOURCE_EXHAUSTED, function, "out of host memory");
  } catch (...) {
    return fail(RILL_INTERNAL, function, "unexpected exception");
  }
}

}  // namespace rill::capi
