// Status helpers: names for codes and the constructors used across the engine.
#include "rill/status.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/flag_words.hpp"

namespace rill {
namespace {

bool locations_by_default() {
  // The spellings RILL_VALIDATION takes; anything else leaves the build's default (a status has no
  // status of its own to report a bad value with).
  if (const char* env = std::getenv("RILL_STATUS_LOCATIONS"); env != nullptr && *env != '\0') {
    if (const std::optional<bool> on = detail::parse_flag_word(env)) return *on;
  }
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

std::atomic<bool>& locations_shown() {
  static std::atomic<bool> shown{locations_by_default()};
  return shown;
}

// The path from the project's top folder: the compiler's path is wherever the build ran.
std::string_view project_relative(std::string_view file) {
  for (const char* top : {"/engine/", "/tools/", "/tests/", "/samples/"}) {
    const size_t at = file.rfind(top);
    if (at != std::string_view::npos) return file.substr(at + 1);
  }
  return file;
}

}  // namespace

void set_status_locations(bool shown) { locations_shown().store(shown); }
bool status_locations() { return locations_shown().load(); }

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDeviceLost: return "DeviceLost";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  std::string text = std::string(status_code_name(code_)) + ": " + message_;
  if (status_locations() && file_ != nullptr) text += " (at " + location() + ")";
  return text;
}

std::string Status::location() const {
  if (is_ok() || file_ == nullptr) return {};
  return std::string(project_relative(file_)) + ":" + std::to_string(line_);
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  Status out = *this;  // keeps the origin
  out.message_ = std::string(context) + ": " + message_;
  return out;
}

Status invalid_argument(std::string m, SourceLocation where) {
  return {StatusCode::kInvalidArgument, std::move(m), where};
}
Status not_found(std::string m, SourceLocation where) { return {StatusCode::kNotFound, std::move(m), where}; }
Status resource_exhausted(std::string m, SourceLocation where) {
  return {StatusCode::kResourceExhausted, std::move(m), where};
}
Status failed_precondition(std::string m, SourceLocation where) {
  return {StatusCode::kFailedPrecondition, std::move(m), where};
}
Status unavailable(std::string m, SourceLocation where) { return {StatusCode::kUnavailable, std::move(m), where}; }
Status data_loss(std::string m, SourceLocation where) { return {StatusCode::kDataLoss, std::move(m), where}; }
Status out_of_range(std::string m, SourceLocation where) { return {StatusCode::kOutOfRange, std::move(m), where}; }
Status internal_error(std::string m, SourceLocation where) { return {StatusCode::kInternal, std::move(m), where}; }
Status unimplemented(std::string m, SourceLocation where) { return {StatusCode::kUnimplemented, std::move(m), where}; }
Status cancelled(std::string m, SourceLocation where) { return {StatusCode::kCancelled, std::move(m), where}; }
Status deadline_exceeded(std::string m, SourceLocation where) {
  return {StatusCode::kDeadlineExceeded, std::move(m), where};
}

namespace detail {
void value_of_error(const Status& status) {
  const std::string where = status.location();
  std::fprintf(stderr, "rill: the value of a Result was read, but it holds an error: %s: %s%s%s\n",
               status_code_name(status.code()), status.message().c_str(), where.empty() ? "" : " (at ",
               where.empty() ? "" : (where + ")").c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace rill
