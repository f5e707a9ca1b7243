// The C API: converts between C structs and rill's C++ types, and C++ Status into a status code
// plus a thread-local message. Nothing thrown or aborted escapes.
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "capi/capi_common.hpp"
#include "rill/context.hpp"
#include "rill/rill.h"
#include "rill/version.hpp"

namespace rill::capi {

namespace {
thread_local std::string g_last_error;
// Set when a message could not be kept (no host memory for it); rill_last_error() then says so.
thread_local bool g_message_lost = false;
constexpr const char* kMessageLost = "out of host memory (the error's own message could not be kept)";
}  // namespace

namespace handles {
namespace {
// Never destroyed: a handle may be destroyed during static destruction.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_map<const void*, const void*>& registry() {
  static auto* r = new std::unordered_map<const void*, const void*>;
  return *r;
}
}  // namespace

void add(const void* handle, const void* kind) {
  const std::lock_guard lock(registry_mutex());
  registry()[handle] = kind;
}

bool live(const void* handle, const void* kind) noexcept {
  const std::lock_guard lock(registry_mutex());
  const auto it = registry().find(handle);
  return it != registry().end() && it->second == kind;
}

bool take(const void* handle, const void* kind) noexcept {
  const std::lock_guard lock(registry_mutex());
  const auto it = registry().find(handle);
  if (it == registry().end() || it->second != kind) return false;
  registry().erase(it);
  return true;
}
}  // namespace handles

rill_status fail(rill_status code, std::string_view message) noexcept {
  try {
    g_last_error.assign(message);
    g_message_lost = false;
  } catch (...) {
    g_message_lost = true;
  }
  return code;
}

rill_status fail(rill_status code, const char* function, const char* what) noexcept {
  try {
    return fail(code, std::string(function) + ": " + what);
  } catch (...) {
    g_message_lost = true;
    return code;
  }
}

// rill_status mirrors rill::StatusCode value for value (from_status casts one to the other).
static_assert(int(RILL_OK) == int(rill::StatusCode::kOk));
static_assert(int(RILL_INVALID_ARGUMENT) == int(rill::StatusCode::kInvalidArgument));
static_assert(int(RILL_NOT_FOUND) == int(rill::StatusCode::kNotFound));
static_assert(int(RILL_RESOURCE_EXHAUSTED) == int(rill::StatusCode::kResourceExhausted));
static_assert(int(RILL_FAILED_PRECONDITION) == int(rill::StatusCode::kFailedPrecondition));
static_assert(int(RILL_UNAVAILABLE) == int(rill::StatusCode::kUnavailable));
static_assert(int(RILL_DEVICE_LOST) == int(rill::StatusCode::kDeviceLost));
static_assert(int(RILL_DATA_LOSS) == int(rill::StatusCode::kDataLoss));
static_assert(int(RILL_OUT_OF_RANGE) == int(rill::StatusCode::kOutOfRange));
static_assert(int(RILL_INTERNAL) == int(rill::StatusCode::kInternal));
static_assert(int(RILL_UNIMPLEMENTED) == int(rill::StatusCode::kUnimplemented));
static_assert(int(RILL_CANCELLED) == int(rill::StatusCode::kCancelled));
static_assert(int(RILL_DEADLINE_EXCEEDED) == int(rill::StatusCode::kDeadlineExceeded));
// rill_device_info.type is the C++ DeviceType cast (device_info below).
static_assert(int(RILL_DEVICE_DISCRETE_GPU) == int(rill::DeviceType::kDiscreteGpu));
static_assert(int(RILL_DEVICE_INTEGRATED_GPU) == int(rill::DeviceType::kIntegratedGpu));
static_assert(int(RILL_DEVICE_VIRTUAL_GPU) == int(rill::DeviceType::kVirtualGpu));
static_assert(int(RILL_DEVICE_CPU) == int(rill::DeviceType::kCpu));
static_assert(int(RILL_DEVICE_OTHER) == int(rill::DeviceType::kOther));

void name_last_error(const char* function) noexcept {
  try {
    const std::string_view name(function);
    if (g_message_lost || (g_last_error.size() > name.size() && g_last_error.compare(0, name.size(), name) == 0 &&
                           g_last_error[name.size()] == ':'))
      return;
    g_last_error.insert(0, std::string(name) + ": ");
  } catch (...) {
    g_message_lost = true;
  }
}

rill_status from_status(const rill::Status& s) noexcept {
  if (s.is_ok()) return RILL_OK;
  return fail(static_cast<rill_status>(s.code()), s.message());
}

}  // namespace rill::capi

namespace {

using rill::capi::dead;
using rill::capi::destroy_handle;
using rill::capi::fail;
using rill::capi::from_status;
using rill::capi::g_last_error;
using rill::capi::g_message_lost;
using rill::capi::kMessageLost;
using rill::capi::make_handle;

void copy_text(char* dst, size_t capacity, const std::string& src) {
  const size_t n = std::min(capacity - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" {

void rill_context_options_init_sized(rill_context_options* options, uint32_t size) {
  rill_context_options defaults{};
  defaults.device_index = -1;
  rill::capi::init_sized(options, size, defaults);
}

// 0.1's entry point (programs built against 0.1 call it with 0.1's struct): 0.1's fields only.
void(rill_context_options_init)(rill_context_options* options) {
  rill_context_options_init_sized(options, uint32_t(offsetof(rill_context_options, limit_profile)));
}

rill_status rill_context_create(const rill_context_options* options, rill_context** out) {
  if (out == nullptr) return fail(RILL_INVALID_ARGUMENT, "rill_context_create: out is NULL");
  *out = nullptr;
  return rill::capi::guarded("rill_context_create", [&]() -> rill_status {
    rill::ContextOptions opts;
    if (options != nullptr) {
      // Earlier layouts end before a later field: each such field keeps its default.
      const bool v01 = options->struct_size == offsetof(rill_context_options, limit_profile);
      const bool before_budget = v01 || options->struct_size == offsetof(rill_context_options, device_memory_budget);
      const bool before_plan = before_budget || options->struct_size == offsetof(rill_context_options, kernel_plan);
      const bool before_timeout =
          before_plan || options->struct_size == offsetof(rill_context_options, gpu_wait_timeout_ms);
      if (options->struct_size != sizeof(rill_context_options) && !before_timeout)
        return fail(RILL_INVALID_ARGUMENT,
                    "rill_context_create: options were not set up with rill_context_options_init");
      if (options->device_index < -1)
        return fail(RILL_INVALID_ARGUMENT, "rill_context_create: device_index must be -1 (rill picks) or >= 0, not " +
                                               std::to_string(options->device_index));
      if (!before_budget) opts.device_memory_budget = options->device_memory_budget;
      if (!before_plan && options->kernel_plan) opts.kernel_plan = options->kernel_plan;
      if (!before_timeout) {
        if (options->gpu_wait_timeout_ms > UINT32_MAX)
          return fail(RILL_INVALID_ARGUMENT, "rill_context_create: gpu_wait_timeout_ms above UINT32_MAX (" +
                                                 std::to_string(options->gpu_wait_timeout_ms) + ")");
        opts.gpu_wait_timeout_ms = uint32_t(options->gpu_wait_timeout_ms);
      }
      opts.device.index = options->device_index;
      if (options->device_name) opts.device.name = options->device_name;
      opts.validation = options->validation != 0;
      if (options->pipeline_cache_path) opts.pipeline_cache_path = options->pipeline_cache_path;
      if (!v01 && options->limit_profile) opts.limit_profile = options->limit_profile;
    }
    auto context = rill::Context::create(opts);
    if (!context.is_ok()) return from_status(context.status());
    *out = make_handle(new rill_context{std::move(context).value()});
    return RILL_OK;
  });
}

void rill_context_destroy(rill_context* context) { destroy_handle(context); }

namespace {
// noexcept: the refusals' messages are built without allocating (nothing may throw into C).
rill_status device_info(const char* function, const rill_context* context, rill_device_info* out,
                        uint32_t size) noexcept {
  if (dead(context) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, function, "NULL argument or destroyed handle");
  if (size < offsetof(rill_device_info, cooperative_matrix_f16))
    return fail(RILL_INVALID_ARGUMENT, function, "a struct smaller than 0.1's");
  const rill::DeviceInfo& d = context->context.device();
  rill_device_info info;
  std::memset(&info, 0, sizeof info);  // the padding too: no stray bytes reach the caller
  copy_text(info.name, sizeof info.name, d.name);
  copy_text(info.driver_name, sizeof info.driver_name, d.driver_name);
  info.type = static_cast<rill_device_type>(d.type);
  info.vendor_id = d.vendor_id;
  info.device_id = d.device_id;
  info.api_version = d.caps.api_version;
  info.subgroup_size = d.caps.subgroup_size;
  info.shared_memory_bytes = d.caps.shared_memory_bytes;
  info.device_local_bytes = d.caps.device_local_bytes;
  info.max_storage_buffer_range = d.caps.max_storage_buffer_range;
  info.unified_memory = d.caps.unified_memory;
  info.timestamps = d.caps.timestamps;
  info.storage_buffer_16bit = d.caps.storage_buffer_16bit;
  info.float16_arithmetic = d.caps.float16_arithmetic;
  for (size_t i = 0; i < 3; ++i) info.cooperative_matrix_f16[i] = d.caps.cooperative_matrix_f16[i];
  std::memcpy(out, &info, std::min<size_t>(size, sizeof info));  // no byte past the caller's struct
  return RILL_OK;
}
}  // namespace

rill_status rill_context_device_info_sized(const rill_context* context, rill_device_info* out, uint32_t size) {
  return device_info("rill_context_device_info", context, out, size);  // the name callers write (the macro's)
}

// 0.1's entry point (programs built against 0.1 hold 0.1's struct): 0.1's fields only.
rill_status(rill_context_device_info)(const rill_context* context, rill_device_info* out) {
  return device_info("rill_context_device_info", context, out,
                     uint32_t(offsetof(rill_device_info, cooperative_matrix_f16)));
}

rill_status rill_context_usable(const rill_context* context) {
  if (dead(context)) return fail(RILL_INVALID_ARGUMENT, "rill_context_usable", "NULL argument or destroyed handle");
  return rill::capi::guarded("rill_context_usable", [&] { return from_status(context->context.usable()); });
}

const char* rill_last_error(void) { return g_message_lost ? kMessageLost : g_last_error.c_str(); }

const char* rill_status_name(rill_status status) {
  return rill::status_code_name(static_cast<rill::StatusCode>(status));
}

const char* rill_version(void) { return RILL_VERSION_STRING; }

}  // extern "C"
