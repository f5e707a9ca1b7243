// Default log sink: stderr, warnings and errors only unless RILL_LOG=info.
#include "core/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rill {
namespace {

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}

std::function<void(MessageSeverity, std::string_view)>& log_sink() {
  static std::function<void(MessageSeverity, std::string_view)> sink;
  return sink;
}

bool info_enabled() {
  const char* v = std::getenv("RILL_LOG");
  return v != nullptr && std::strcmp(v, "info") == 0;
}

}  // namespace

void set_log_callback(std::function<void(MessageSeverity, std::string_view)> callback) {
  std::lock_guard<std::mutex> lock(log_mutex());
  log_sink() = std::move(callback);
}

void log_message(MessageSeverity severity, std::string_view message) {
  std::lock_guard<std::mutex> lock(log_mutex());
  if (log_sink()) {
    log_sink()(severity, message);
    return;
  }
  if (severity == MessageSeverity::kInfo && !info_enabled()) return;
  const char* tag = severity == MessageSeverity::kError ? "error" : severity == MessageSeverity::kWarning ? "warning" : "info";
  std::fprintf(stderr, "rill %s: %.*s\n", tag, static_cast<int>(message.size()), message.data());
}

}  // namespace rill
