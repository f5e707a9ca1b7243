// rill's log sink for warnings and diagnostics (errors travel as Status, not through here).
#pragma once

#include <string_view>

#include "rill/log.hpp"

namespace rill {

void log_message(MessageSeverity severity, std::string_view message);
inline void log_warning(std::string_view message) { log_message(MessageSeverity::kWarning, message); }
inline void log_info(std::string_view message) { log_message(MessageSeverity::kInfo, message); }

}  // namespace rill
