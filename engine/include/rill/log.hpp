// Where rill's warnings and diagnostics go. Not errors: those are returned as Status.
#pragma once

#include <functional>
#include <string_view>

#include "rill/export.hpp"
#include "rill/types.hpp"

namespace rill {

// Log sink for warnings and diagnostics from rill (default: stderr, warnings and errors; RILL_LOG=info
// adds the informational messages, RILL_LOG=error keeps only errors). It runs inside rill's calls, some holding a
// process-wide lock (context creation): it must not create a context or list devices.
RILL_API void set_log_callback(std::function<void(MessageSeverity, std::string_view)> callback);

}  // namespace rill
