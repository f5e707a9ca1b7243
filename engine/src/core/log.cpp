// Default log sink: stderr, warnings and errors unless RILL_LOG says info (more) or error (less).
#include "core/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

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

// The least severe message the default sink prints under RILL_LOG (unset or empty: warnings);
// none for a value it does not name.
std::optional<MessageSeverity> least_printed_under(const char* v) {
  if (v == nullptr || *v == '\0' || std::strcmp(v, "warning") == 0) return MessageSeverity::kWarning;
  if (std::strcmp(v, "info") == 0) return MessageSeverity::kInfo;
  if (std::strcmp(v, "error") == 0) return MessageSeverity::kError;
  return std::nullopt;
}

int rank(MessageSeverity s) { return s == MessageSeverity::kError ? 2 : s == MessageSeverity::kWarning ? 1 : 0; }

}  // namespace

Status check_log_env() {
  const char* v = std::getenv("RILL_LOG");
  if (least_printed_under(v)) return Status::ok();
  return invalid_argument("RILL_LOG='" + std::string(v) + "': info, warning (the default) or error");
}

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
  // A malformed value keeps the default (a context refuses it: check_log_env).
  const MessageSeverity least = least_printed_under(std::getenv("RILL_LOG")).value_or(MessageSeverity::kWarning);
  if (rank(severity) < rank(least)) return;
  const char* tag = severity == MessageSeverity::kError ? "error" : severity == MessageSeverity::kWarning ? "warning" : "info";
  std::fprintf(stderr, "rill %s: %.*s\n", tag, static_cast<int>(message.size()), message.data());
}

}  // namespace rill
