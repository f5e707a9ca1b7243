// rill::Context: device selection and creation, memory, pipelines and synchronous transfers.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "access.hpp"
#include "context_impl.hpp"
#include "core/checked_math.hpp"
#include "core/deliberate_leak.hpp"
#include "core/file_io.hpp"
#include "core/flag_words.hpp"
#include "core/host_memory_guard.hpp"
#include "core/log.hpp"
#include "kernel_plan.hpp"
#include "profile/peaks_cache.hpp"
#include "rill/half.hpp"
#include "rill/tuning.hpp"

namespace rill {
namespace detail {

namespace {

// The events of destroyed contexts by trace path: a later context profiling to the same path writes
// them with its own, so one trace holds every context of the program (a second context replaced
// the first's trace).
struct FinishedProfiles {
  std::mutex mutex;
  std::map<std::string, std::vector<ProfileEvent>> events;
};
FinishedProfiles& finished_profiles() {
  static FinishedProfiles finished;
  return finished;
}

}  // namespace

ContextImpl::~ContextImpl() {
  bool drained = true;
  try {
    if (submissions) submissions->drain();
  } catch (...) {  // out of host memory while it waited: what the GPU may still use is leaked below
    drained = false;
  }
  // Writing the profile and the pipeline cache allocates: without host memory they are skipped,
  // as a throw out of a destructor would end the process (the C API's destroy calls land here).
  const auto without_throwing = [](const char* what, auto&& write) noexcept {
    try {
      write();
    } catch (...) {
      try {
        log_message(MessageSeverity::kWarning, std::string(what) + " not written: out of host memory");
      } catch (...) {  // nothing left to say it with
      }
    }
  };
  if (profiler.enabled() && device) {
    without_throwing("the profile", [&] {
      Status s = write_profile();
      if (!s.is_ok()) log_message(MessageSeverity::kWarning, s.to_string());
      FinishedProfiles& finished = finished_profiles();
      const std::lock_guard lock(finished.mutex);
      std::vector<ProfileEvent>& kept = finished.events[profiler.path()];
      const size_t room = Profiler::kMaxEvents > kept.size() ? Profiler::kMaxEvents - kept.size() : 0;
      kept.insert(kept.end(), profiler.events().begin(),
                  profiler.events().begin() + std::min(room, profiler.events().size()));
    });
  }
  if (pipelines) {
    without_throwing("the pipeline cache", [&] {
      Status s = pipelines->save();
      if (!s.is_ok()) log_message(MessageSeverity::kWarning, s.to_string());
    });
  }
  if (submissions && (submissions->leaked() || !drained)) {
    // The GPU may still run work that uses them (drain's wait did not see the work end):
    // left alive, not freed under it (on an application's device, which lives on, above all).
    // rill's own device too: destroying a device with work queued and children alive is
    // undefined (an application's device is only unwrapped, never destroyed). The instance goes
    // back to the pool as usual: rill never destroys its instances.
    leak_deliberately(std::move(pipelines));
    leak_deliberately(std::make_unique<vk::UniqueCommandPool>(std::move(transfer_pool)));
    leak_deliberately(std::move(allocator));
    leak_deliberately(std::move(submissions));
    leak_deliberately(std::move(device));
  }
  pipelines.reset();
  transfer_pool.reset();
  submissions.reset();
  allocator.reset();
  device.reset();
  instance.reset();
}

Status ContextImpl::write_profile() {
  if (!profiler.enabled()) return failed_precondition("profiling is off (set ContextOptions::profile_path or RILL_PROFILE)");
  auto peaks = read_cached_peaks(device->info(), {});
  const DevicePeaks* p = peaks.is_ok() ? &peaks.value() : nullptr;
  std::vector<ProfileEvent> events;  // the destroyed contexts' of this path, then this one's
  {
    FinishedProfiles& finished = finished_profiles();
    const std::lock_guard lock(finished.mutex);
    if (auto it = finished.events.find(profiler.path()); it != finished.events.end()) events = it->second;
  }
  events.insert(events.end(), profiler.events().begin(), profiler.events().end());
  const std::string trace = chrome_trace_json(events, device->info().name, p);
  RILL_RETURN_IF_ERROR(write_file_atomic(profiler.path(), {reinterpret_cast<const uint8_t*>(trace.data()), trace.size()}));
  std::string summary = format_profile_summary(summarize_profile(events, p), p);
  if (!p) summary += "(no cached device peaks: run `rill bench --op peaks` once for roofline shares)\n";
  return write_file_atomic(profiler.path() + ".summary.txt", {reinterpret_cast<const uint8_t*>(summary.data()), summary.size()});
}

Result<vk::Allocation> ContextImpl::allocate(uint64_t bytes, vk::PoolKind pool) {
  const uint64_t calls_before = faults.calls_seen();
  Result<vk::Allocation> first = allocator->allocate(bytes, pool);
  // An injected failure is the test's: tried again, it would pass, and its error path go untested.
  if (first.is_ok() || first.status().code() != StatusCode::kResourceExhausted || !submissions->has_retirees() ||
      faults.last_injected() > calls_before)
    return first;
  // Tensors and staging released while their work ran are freed as it finishes (the retirees):
  // waited for, not the work after them.
  const uint64_t used = allocator->stats().used_bytes;
  RILL_RETURN_IF_ERROR(submissions->wait(submissions->last_retiree_serial()));
  if (allocator->stats().used_bytes >= used) return first;  // nothing came back
  return allocator->allocate(bytes, pool);
}

Status ContextImpl::wait_for(const TensorStorage& storage) {
  // The owner of the memory: every view's use is recorded there (mark_used), a view's own serial
  // only since it was made, so a view's copy would not wait for its parent's or a sibling's use.
  const TensorStorage& owner = storage.parent ? *storage.parent : storage;
  const uint64_t serial = std::max(storage.last_use, owner.last_use);
  if (serial > submissions->completed()) return submissions->wait(serial);
  return Status::ok();
}

}  // namespace detail

namespace {

// An on/off variable: unset, empty, 0, false, no or off is off; 1, true, yes or on is on (any
// case); anything else is refused by name (RILL_VALIDATION=enabled must not quietly mean off).
Result<bool> env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  if (const std::optional<bool> on = detail::parse_flag_word(v)) return *on;
  return invalid_argument(std::string(name) + "='" + v + "': use 1 or 0 (true/false, yes/no, on/off)");
}

// "1048576", "512K", "512M" or "2G" (powers of 1024) as bytes; anything else is refused by name.
Result<uint64_t> parse_byte_count(std::string_view text, const char* what) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string_view suffix(end, size_t(text.data() + text.size() - end));
  const uint64_t unit = suffix.empty()  ? 1
                        : suffix == "K" ? 1ull << 10
                        : suffix == "M" ? 1ull << 20
                        : suffix == "G" ? 1ull << 30
                                        : 0;
  if (text.empty() || ec != std::errc() || unit == 0 || n > UINT64_MAX / unit)
    return invalid_argument(std::string(what) + " is '" + std::string(text) +
                            "'; give bytes, or a count with K, M or G (512M)");
  return n * unit;
}

// "500ms" or "30s" (or "0": no limit) as milliseconds; a bare number is refused (which unit?).
Result<uint32_t> parse_milliseconds(std::string_view text, const char* what) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string_view unit(end, size_t(text.data() + text.size() - end));
  const uint64_t scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit.empty() && n == 0 && ec == std::errc() ? 1 : 0;
  if (text.empty() || ec != std::errc() || scale == 0 || n > UINT32_MAX / scale)
    return invalid_argument(std::string(what) + " is '" + std::string(text) +
                            "'; give milliseconds or seconds with their unit (500ms, 30s; 0: no limit)");
  return uint32_t(n * scale);
}

Status check_tensor(const detail::ContextImpl& ctx, const Tensor& t, const char* what) {
  if (!t.valid()) return invalid_argument(std::string(what) + ": the tensor is empty");
  if (detail::Access::storage(t)->context.get() != &ctx)
    return invalid_argument(std::string(what) + ": tensor '" + t.name() + "' belongs to another context");
  return ctx.check_usable();
}

// The tuning file's plan, where it was made on this device with this kernel family; otherwise a
// warning and the plan's own choices (a tuning file only ever changes speed).
void load_tuning(detail::ContextImpl& impl, std::string path) {
  if (const char* env = std::getenv("RILL_TUNING"); path.empty() && env != nullptr) path = env;
  if (path.empty()) return;
  const DeviceInfo& device = impl.device->info();
  auto tuning = read_tuning_file(path, device);
  if (!tuning.is_ok()) {
    log_warning(tuning.status().message() + "; planning without it");
    return;
  }
  const std::string_view family =
      ops::plan::family_name(ops::plan::traits_of(device, impl.pipelines->preferred_variant()).family);
  if (tuning->family != family) {
    log_warning("tuning file '" + path + "' was measured with the " + tuning->family + " kernels, and " + device.name +
                " runs the " + std::string(family) + " kernels here; planning without it");
    return;
  }
  impl.tuned_plan = tuning->kernel_plan;
  log_info("tuning file '" + path + "': " + (impl.tuned_plan.empty() ? "the plan's own choices" : impl.tuned_plan));
}

}  // namespace

Context::Context(std::shared_ptr<detail::ContextImpl> impl) : impl_(std::move(impl)) {}
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;
Context::~Context() = default;

Result<Context> Context::create(const ContextOptions& options) {
  auto impl = std::make_shared<detail::ContextImpl>();
  std::string profile = options.limit_profile;
  if (const char* env = std::getenv("RILL_LIMIT_PROFILE"); profile.empty() && env != nullptr) profile = env;
  auto apply_profile = [&](DeviceInfo& info) { return profile.empty() ? Status::ok() : apply_limit_profile(profile, info); };
  if (DeviceInfo probe; !profile.empty()) RILL_RETURN_IF_ERROR(apply_profile(probe));  // a bad name fails first
  // Malformed settings and a trace that cannot be written are refused before any Vulkan work (a
  // trace path was found bad only when the context was destroyed, after the profiled work).
  RILL_RETURN_IF_ERROR(check_log_env());
  RILL_ASSIGN_OR_RETURN(const bool validation_env, env_flag("RILL_VALIDATION"));
  const char* profile_env = std::getenv("RILL_PROFILE");
  const bool profile_from_env = options.profile_path.empty() && profile_env != nullptr && *profile_env != '\0';
  const std::string trace = profile_from_env ? profile_env : options.profile_path;
  if (!trace.empty()) {
    const char* what = profile_from_env ? "RILL_PROFILE" : "ContextOptions::profile_path";
    RILL_RETURN_IF_ERROR(check_writable(trace).with_context(what));
    RILL_RETURN_IF_ERROR(check_writable(trace + ".summary.txt").with_context(what));
  }
  std::vector<vk::PhysicalDevice> devices;
  int chosen = -1;
  if (options.external != nullptr) {
    const ExternalVulkan& ext = *options.external;
    if (!ext.instance || !ext.physical_device || !ext.device || !ext.queue)
      return invalid_argument("ExternalVulkan needs instance, physical_device, device and queue");
    RILL_ASSIGN_OR_RETURN(impl->instance, vk::Instance::wrap(ext.instance, ext.api_version));
    const vk::InstanceFunctionsLock functions(impl->instance->handle());
    devices.push_back(vk::describe_physical_device(ext.physical_device, 0, impl->instance->api_version()));
    chosen = 0;
    impl->selection_reason = "the application supplied the device";
    if (options.validation || validation_env)
      log_warning(
          "validation was asked for, but the application supplied the Vulkan instance: enable the "
          "validation layer when creating it");
    RILL_RETURN_IF_ERROR(apply_profile(devices[0].info));
    RILL_ASSIGN_OR_RETURN(impl->device, vk::Device::wrap(devices[0], ext.device, ext.queue, ext.queue_family_index));
  } else {
    vk::InstanceConfig config;
    config.validation = options.validation || validation_env;
    config.synchronization_validation = options.synchronization_validation;
    config.on_message = options.on_validation_message;
    RILL_ASSIGN_OR_RETURN(impl->instance, vk::Instance::create(config));
    const vk::InstanceFunctionsLock functions(impl->instance->handle());
    RILL_ASSIGN_OR_RETURN(devices, vk::enumerate_physical_devices(impl->instance->handle(), impl->instance->api_version()));
    RILL_ASSIGN_OR_RETURN(chosen, vk::choose_device(devices, options.device, impl->selection_reason));
    // Applied before the device is created, so that the features a profile removes are not enabled.
    RILL_RETURN_IF_ERROR(apply_profile(devices[size_t(chosen)].info));
    RILL_ASSIGN_OR_RETURN(impl->device, vk::Device::create(devices[size_t(chosen)]));
  }
  vk::Device& device = *impl->device;
  if (!trace.empty()) impl->profiler.enable(trace);
  if (impl->profiler.enabled() && !device.info().caps.timestamps)
    log_warning("profiling " + device.info().name + ", which has no timestamp queries: only host times are recorded");
  uint64_t budget = options.device_memory_budget;
  if (const char* env = std::getenv("RILL_DEVICE_MEMORY_BUDGET"); budget == 0 && env != nullptr) {
    RILL_ASSIGN_OR_RETURN(budget, parse_byte_count(env, "RILL_DEVICE_MEMORY_BUDGET"));
  }
  impl->allocator = std::make_unique<vk::Allocator>(device, impl->faults, options.memory_block_bytes, budget);
  impl->submissions = std::make_unique<vk::Submissions>(device, impl->faults, impl->profiler);
  uint32_t timeout_ms = options.gpu_wait_timeout_ms;
  if (const char* env = std::getenv("RILL_GPU_WAIT_TIMEOUT"); timeout_ms == 0 && env != nullptr) {
    RILL_ASSIGN_OR_RETURN(timeout_ms, parse_milliseconds(env, "RILL_GPU_WAIT_TIMEOUT"));
  }
  impl->submissions->set_timeout_ms(timeout_ms);
  RILL_ASSIGN_OR_RETURN(const bool statistics_env, env_flag("RILL_PIPELINE_STATISTICS"));
  const bool capture_statistics = options.pipeline_statistics || statistics_env;
  // A kernel family other than cpu or gpu would be taken as the device's own choice, silently.
  for (const auto& [variant, what] :
       {std::pair<std::string, const char*>{options.kernel_variant, "kernel_variant"},
        {std::getenv("RILL_KERNEL_VARIANT") ? std::getenv("RILL_KERNEL_VARIANT") : "", "RILL_KERNEL_VARIANT"}})
    if (!variant.empty() && variant != "cpu" && variant != "gpu")
      return invalid_argument(std::string(what) + " '" + variant + "': the kernel family is cpu or gpu");
  impl->pipelines = std::make_unique<vk::PipelineManager>(
      device, impl->faults, impl->profiler, options.pipeline_cache_path, options.kernel_variant, capture_statistics);
  RILL_RETURN_IF_ERROR(impl->pipelines->init());
  impl->kernel_plan = options.kernel_plan;
  if (const char* env = std::getenv("RILL_KERNEL_PLAN"); impl->kernel_plan.empty() && env != nullptr)
    impl->kernel_plan = env;
  RILL_RETURN_IF_ERROR(ops::plan::parse_overrides(impl->kernel_plan).status());
  load_tuning(*impl, options.tuning_path);
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool_info.queueFamilyIndex = device.queue_family();
  RILL_ASSIGN_OR_RETURN(
      impl->transfer_pool,
      vk::create_unique<vk::UniqueCommandPool>(device, impl->faults, "vkCreateCommandPool", [&](auto* out) {
        return device.fn().vkCreateCommandPool(device.handle(), &pool_info, nullptr, out);
      }));
  Context ctx(std::move(impl));
  ctx.impl_->submissions->set_spin_us(ops::plan::wait_spin_us(ops::plan::traits_of(ctx)));
  return ctx;
}

const DeviceInfo& Context::device() const { return impl_->device->info(); }
const std::string& Context::selection_reason() const { return impl_->selection_reason; }
const std::string& Context::tuned_plan() const { return impl_->tuned_plan; }
const std::string& Context::kernel_plan() const { return impl_->kernel_plan; }
Status Context::set_kernel_plan(std::string plan) {
  RILL_RETURN_IF_ERROR(ops::plan::parse_overrides(plan).status());
  impl_->kernel_plan = std::move(plan);
  impl_->submissions->set_spin_us(ops::plan::wait_spin_us(ops::plan::traits_of(*this)));
  return Status::ok();
}
std::string Context::kernel_family() const {
  return std::string(ops::plan::family_name(ops::plan::traits_of(*this).family));
}
bool Context::device_lost() const { return impl_->device->lost(); }
Status Context::usable() const { return impl_->check_usable(); }
MemoryStats Context::memory_stats() const { return impl_->allocator->stats(); }
void Context::reset_peak_memory() { impl_->allocator->reset_peak(); }
PipelineStats Context::pipeline_stats() const { return impl_->pipelines->stats(); }
Result<std::vector<PipelineStatistic>> Context::pipeline_statistics(uint32_t pipeline) const {
  return impl_->pipelines->statistics(pipeline);
}
Status Context::save_pipeline_cache() { return impl_->pipelines->save(); }
bool Context::profiling() const { return impl_->profiler.enabled(); }
std::vector<ProfileEvent> Context::profile_events() const { return impl_->profiler.events(); }
Status Context::write_profile() { return impl_->write_profile(); }

Status Context::wait_idle() {
  RILL_RETURN_IF_ERROR(impl_->check_usable());
  return impl_->submissions->wait_all();
}

std::vector<std::string> Context::kernel_names() const {
  std::vector<std::string> names;
  for (const auto& s : vk::shader_registry())
    if (names.empty() || names.back() != s.kernel) names.emplace_back(s.kernel);
  return names;
}

Result<std::string> Context::kernel_variant(std::string_view kernel) const {
  RILL_ASSIGN_OR_RETURN(const vk::ShaderInfo* shader, impl_->pipelines->resolve(kernel));
  return std::string(shader->variant.empty() ? "default" : shader->variant);
}

Result<Tensor> Context::tensor(DType dtype, std::vector<int64_t> shape, std::string name, MemoryPool pool) {
  return detail::host_memory_guarded(
      "tensor", [&] { return detail::make_tensor(impl_, dtype, std::move(shape), std::move(name), pool); });
}

namespace detail {

Result<Tensor> make_tensor(const std::shared_ptr<ContextImpl>& impl_, DType dtype, std::vector<int64_t> shape,
                           std::string name, MemoryPool pool) {
  RILL_RETURN_IF_ERROR(impl_->check_usable());
  if (shape.empty()) return invalid_argument("tensor '" + name + "': shape must have at least one dimension");
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 1) return invalid_argument("tensor '" + name + "': every dimension must be >= 1");
    auto product = checked_mul(elements, static_cast<uint64_t>(d));
    if (!product) return out_of_range("tensor '" + name + "': element count overflows");
    elements = *product;
  }
  auto bytes = checked_mul(elements, dtype_size(dtype));
  if (!bytes) return out_of_range("tensor '" + name + "': byte size overflows");
  auto storage = std::make_shared<detail::TensorStorage>();
  switch (pool) {
    case MemoryPool::kWeights:
      storage->pool = vk::PoolKind::kWeights;
      break;
    case MemoryPool::kActivations:
      storage->pool = vk::PoolKind::kActivations;
      break;
    case MemoryPool::kUploads:
      storage->pool = vk::PoolKind::kUploads;
      break;
  }
  auto allocation = impl_->allocate(*bytes, storage->pool);
  if (!allocation.is_ok()) return allocation.status().with_context("tensor '" + name + "'");
  storage->context = impl_;
  storage->allocation = allocation.value();
  storage->dtype = dtype;
  storage->shape = std::move(shape);
  storage->elements = elements;
  storage->bytes = *bytes;
  storage->name = std::move(name);
  return detail::Access::tensor(std::move(storage));
}

}  // namespace detail

Status Context::upload(const Tensor& tensor, std::span<const uint8_t> bytes) {
  return detail::host_memory_guarded("upload", [&]() -> Status {
    RILL_RETURN_IF_ERROR(check_tensor(*impl_, tensor, "upload"));
    detail::TensorStorage& t = *detail::Access::storage(tensor);
    if (bytes.size() != t.bytes)
      return invalid_argument("upload to " + tensor.describe() + ": got " + std::to_string(bytes.size()) +
                              " bytes, the tensor has " + std::to_string(t.bytes));
    RILL_RETURN_IF_ERROR(impl_->wait_for(t));
    const double start_us = impl_->profiler.enabled() ? impl_->profiler.now_us() : 0.0;
    if (uint8_t* dst = t.allocation.mapped()) {
      std::memcpy(dst, bytes.data(), bytes.size());
      impl_->profiler.add_host_after([&] { return "upload " + tensor.describe(); }, "transfer", start_us);
      return Status::ok();
    }
    RILL_ASSIGN_OR_RETURN(vk::Allocation staging, impl_->allocate(t.bytes, vk::PoolKind::kStaging));
    std::memcpy(staging.mapped(), bytes.data(), bytes.size());
    const auto& fn = impl_->device->fn();
    Status s = impl_->run_once(
        [&](VkCommandBuffer cb) {
          VkBufferCopy region{staging.offset, t.offset(), t.bytes};
          fn.vkCmdCopyBuffer(cb, staging.buffer(), t.buffer(), 1, &region);
          // Copy -> later compute or transfer work of other submissions.
          VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                                      VK_ACCESS_TRANSFER_WRITE_BIT};
          fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier,
                                  0, nullptr, 0, nullptr);
        },
        t, [allocator = impl_->allocator.get(), staging](const Status&) { allocator->release(staging); });
    impl_->profiler.add_host_after([&] { return "upload " + tensor.describe(); }, "transfer", start_us);
    return s;
  });
}

Status Context::download(const Tensor& tensor, std::span<uint8_t> bytes) {
  return detail::host_memory_guarded("download", [&]() -> Status {
    RILL_RETURN_IF_ERROR(check_tensor(*impl_, tensor, "download"));
    detail::TensorStorage& t = *detail::Access::storage(tensor);
    if (bytes.size() != t.bytes)
      return invalid_argument("download of " + tensor.describe() + ": buffer has " + std::to_string(bytes.size()) +
                              " bytes, the tensor has " + std::to_string(t.bytes));
    RILL_RETURN_IF_ERROR(impl_->wait_for(t));
    const double start_us = impl_->profiler.enabled() ? impl_->profiler.now_us() : 0.0;
    if (const uint8_t* src = t.allocation.mapped()) {
      std::memcpy(bytes.data(), src, bytes.size());
      impl_->profiler.add_host_after([&] { return "download " + tensor.describe(); }, "transfer", start_us);
      return Status::ok();
    }
    RILL_ASSIGN_OR_RETURN(vk::Allocation staging, impl_->allocate(t.bytes, vk::PoolKind::kStaging));
    const auto& fn = impl_->device->fn();
    Status s = impl_->run_once(
        [&](VkCommandBuffer cb) {
          VkBufferCopy region{t.offset(), staging.offset, t.bytes};
          fn.vkCmdCopyBuffer(cb, t.buffer(), staging.buffer(), 1, &region);
          // Copy -> host read of the staging memory after the fence.
          VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                                  VK_ACCESS_HOST_READ_BIT};
          fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                                  nullptr, 0, nullptr);
        },
        t,
        [&bytes, allocator = impl_->allocator.get(), staging](const Status& done) {
          // Only where the wait succeeded: a retired copy's caller is gone.
          if (done.is_ok()) std::memcpy(bytes.data(), staging.mapped(), bytes.size());
          allocator->release(staging);
        });
    impl_->profiler.add_host_after([&] { return "download " + tensor.describe(); }, "transfer", start_us);
    return s;
  });
}

Status Context::upload_floats(const Tensor& tensor, std::span<const float> values) {
  return detail::host_memory_guarded("upload_floats", [&]() -> Status {
    RILL_RETURN_IF_ERROR(check_tensor(*impl_, tensor, "upload_floats"));
    if (values.size() != tensor.element_count())
      return invalid_argument("upload_floats to " + tensor.describe() + ": got " + std::to_string(values.size()) +
                              " values for " + std::to_string(tensor.element_count()) + " elements");
    if (tensor.dtype() == DType::kF32)
      return upload(tensor, {reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()});
    if (tensor.dtype() != DType::kF16)
      return invalid_argument("upload_floats needs an f32 or f16 tensor; " + tensor.describe() + " is not");
    std::vector<uint16_t> halves(values.size());
    for (size_t i = 0; i < values.size(); ++i) halves[i] = float_to_half(values[i]);
    return upload(tensor, {reinterpret_cast<const uint8_t*>(halves.data()), halves.size() * 2});
  });
}

Result<std::vector<float>> Context::download_floats(const Tensor& tensor) {
  return detail::host_memory_guarded("download_floats", [&]() -> Result<std::vector<float>> {
    RILL_RETURN_IF_ERROR(check_tensor(*impl_, tensor, "download_floats"));
    std::vector<float> out(tensor.element_count());
    if (tensor.dtype() == DType::kF32) {
      RILL_RETURN_IF_ERROR(download(tensor, {reinterpret_cast<uint8_t*>(out.data()), out.size() * 4}));
      return out;
    }
    if (tensor.dtype() != DType::kF16)
      return invalid_argument("download_floats needs an f32 or f16 tensor; " + tensor.describe() + " is not");
    std::vector<uint16_t> halves(out.size());
    RILL_RETURN_IF_ERROR(download(tensor, {reinterpret_cast<uint8_t*>(halves.data()), halves.size() * 2}));
    for (size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(halves[i]);
    return out;
  });
}

}  // namespace rill
