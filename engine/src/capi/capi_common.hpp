// Shared pieces of the C API's translation units: the handle types and the status plumbing.
#pragma once

#include <string>

#include "rill/context.hpp"
#include "rill/rill.h"

struct rill_context {
  rill::Context context;
};

namespace rill::capi {

// Records the message for rill_last_error() and returns the code.
rill_status fail(rill_status code, std::string message);
rill_status from_status(const rill::Status& s);

// Runs f (returning rill_status), turning anything thrown into a status: nothing escapes to C.
template <typename F>
rill_status guarded(const char* function, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(RILL_RESOURCE_EXHAUSTED, std::string(function) + ": out of host memory");
  } catch (...) {
    return fail(RILL_INTERNAL, std::string(function) + ": unexpected exception");
  }
}

}  // namespace rill::capi
