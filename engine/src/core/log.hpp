// rill's log sink for warnings and diagnostics (errors travel as Status, not through here).
#pragma once

#include <string_view>

#include "rill/log.hpp"
#include "rill/status.hpp"

namespace rill {

void log_message(MessageSeverity severity, std::string_view message);
inline void log_warning(std::string_view message) { log_message(MessageSeverity::kWarning, message); }
inline void log_info(std::string_view message) { log_message(MessageSeverity::kInfo, message); }

// InvalidArgument naming RILL_LOG when it is set to something other than info, warning or error
// (a context's creation refuses it, as it does the other RILL_* variables).
Status check_log_env();

}  // namespace rill
