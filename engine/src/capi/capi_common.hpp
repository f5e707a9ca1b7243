// Shared pieces of the C API's translation units: the handle types and the status plumbing.
#pragma once

#include <string>
#include <string_view>

#include "rill/context.hpp"
#include "rill/rill.h"

struct rill_context {
  rill::Context context;
};

namespace rill::capi {

// Records the message for rill_last_error() and returns the code. Never throws: without host
// memory for the message, rill_last_error() says that instead.
rill_status fail(rill_status code, std::string_view message) noexcept;
// The same for "function: what", the message built without throwing.
rill_status fail(rill_status code, const char* function, const char* what) noexcept;
rill_status from_status(const rill::Status& s) noexcept;

// Runs f (returning rill_status), turning anything thrown into a status: nothing escapes to C.
template <typename F>
rill_status guarded(const char* function, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(RILL_RESOURCE_EXHAUSTED, function, "out of host memory");
  } catch (...) {
    return fail(RILL_INTERNAL, function, "unexpected exception");
  }
}

}  // namespace rill::capi
