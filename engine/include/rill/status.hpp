// Status and Result<T>: how every fallible rill call reports failure. No exceptions cross the API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "rill/export.hpp"

namespace rill {

// Codes follow the usual canonical set so that callers can branch on the kind of failure.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,     // the caller passed something wrong (shape, binding, option)
  kNotFound = 2,            // a named thing (device, shader, file) does not exist
  kResourceExhausted = 3,   // out of device or host memory, or a pool is full
  kFailedPrecondition = 4,  // the object is in the wrong state for the call
  kUnavailable = 5,         // no Vulkan driver / device / feature needed for the call
  kDeviceLost = 6,          // the device was lost; sticky for the context
  kDataLoss = 7,            // a file is corrupt or truncated
  kOutOfRange = 8,          // a size or index past a device limit
  kInternal = 9,            // a bug in rill or the driver
  kUnimplemented = 10,      // valid request that this build or device cannot do
  kCancelled = 11,          // the caller asked to stop (a prefill's stop hook); what was done is kept
  kDeadlineExceeded = 12,   // the GPU did not finish within the context's wait timeout; its work still runs
};

RILL_API const char* status_code_name(StatusCode code);

// Where in rill's source a Status was created. Not std::source_location: the libstdc++ of Debian 12
// needs a built-in for it that clang only has from version 15 (Debian 12's is 14), and this header
// must compile for every compiler an application may use. GCC, clang and MSVC all have these.
struct SourceLocation {
  const char* file = nullptr;
  uint32_t line = 0;
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), uint32_t line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
};

// A Status records where in rill's source it was created (the origin of an error, however far it
// travels up): location() gives it, and to_string() appends it when locations are shown.
class [[nodiscard]] RILL_API Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, SourceLocation where = SourceLocation::current())
      : code_(code), message_(std::move(message)), file_(where.file), line_(where.line) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>", or "OK"; with " (at engine/src/x.cpp:12)" when locations are shown.
  std::string to_string() const;
  // "engine/src/x.cpp:12": the source file (from the project's top folder) and line that created
  // this status; empty for OK.
  std::string location() const;

  // Prefixes context to the message ("while loading x: <message>"); keeps the code.
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  const char* file_ = nullptr;  // static storage (a string literal of the compiler's)
  uint32_t line_ = 0;
};

// Whether Status::to_string() appends the location: on by default in debug builds of rill (and
// where the environment sets RILL_STATUS_LOCATIONS=1), off otherwise; `rill --verbose` turns it on.
RILL_API void set_status_locations(bool shown);
RILL_API bool status_locations();

RILL_API Status invalid_argument(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status not_found(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status resource_exhausted(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status failed_precondition(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status unavailable(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status data_loss(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status out_of_range(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status internal_error(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status unimplemented(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status cancelled(std::string message, SourceLocation where = SourceLocation::current());
RILL_API Status deadline_exceeded(std::string message, SourceLocation where = SourceLocation::current());

namespace detail {
// Called when a Result holding an error is read as a value: prints the status to stderr and aborts
// (a bug in the caller, like reading an empty std::optional, but never silent or undefined).
[[noreturn]] RILL_API void value_of_error(const Status& status);
}  // namespace detail

// Result<T> holds a T or a non-OK Status. Read the value only after is_ok(): value(), * and -> on
// an error abort the program with the status's message.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.is_ok()) status_ = Status(StatusCode::kInternal, "Result built from an OK status");
  }

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { return checked(); }
  const T& value() const& { return checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &checked(); }
  T& operator*() & { return checked(); }

 private:
  T& checked() {
    if (!value_) detail::value_of_error(status_);
    return *value_;
  }
  const T& checked() const {
    if (!value_) detail::value_of_error(status_);
    return *value_;
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace rill

#define RILL_CONCAT_INNER_(a, b) a##b
#define RILL_CONCAT_(a, b) RILL_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RILL_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::rill::Status rill_status_ = (expr);       \
    if (!rill_status_.is_ok()) return rill_status_; \
  } while (0)

// `RILL_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its status.
#define RILL_ASSIGN_OR_RETURN(lhs, expr) \
  RILL_ASSIGN_OR_RETURN_IMPL_(RILL_CONCAT_(rill_result_, __LINE__), lhs, expr)
#define RILL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
