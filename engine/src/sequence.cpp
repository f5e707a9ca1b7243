// rill::Sequence: its life (command buffer, pools, finish, replayed submission), downloads and
// timings; recording is in sequence_record.cpp, barrier placement in hazard_tracker.cpp.
#include <algorithm>
#include <cstring>
#include <new>

#include "access.hpp"
#include "core/checked_math.hpp"
#include "core/host_memory_guard.hpp"
#include "rill/half.hpp"
#include "sequence_impl.hpp"

namespace rill {
namespace detail {
namespace {

constexpr uint32_t kSetsPerPool = 64;

}  // namespace

Sequence Access::sequence(std::unique_ptr<SequenceImpl> impl) { return Sequence(std::move(impl)); }

SequenceImpl::~SequenceImpl() {
  if (!ctx) return;
  ContextImpl* c = ctx.get();
  // End an unfinished recording first: the Khronos validation layer (1.3.239) leaks its state for
  // a command buffer that is destroyed while still recording.
  if (cb_recording) {
    if (c->instance->debug_utils() && !options.label.empty()) c->instance->end_label(cb());
    (void)c->device->fn().vkEndCommandBuffer(cb());  // a failure leaves nothing to undo: it is freed next
  }
  // The GPU may still run this sequence: its objects go when its last submission has finished
  // (the Vulkan objects with the retiree, once it has run).
  c->submissions->retire(
      last_serial, [c, vulkan = std::move(objects), staging = std::move(staging), downloads = std::move(downloads)] {
        for (const auto& a : staging) c->allocator->release(a);
        for (const auto& d : downloads) c->allocator->release(d.staging);
      });
}

Status SequenceImpl::begin() {
  const auto& fn = ctx->device->fn();
  VkDevice dev = ctx->device->handle();
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = ctx->device->queue_family();
  RILL_ASSIGN_OR_RETURN(objects.pool, vk::create_unique<vk::UniqueCommandPool>(
                                          *ctx->device, ctx->faults, "vkCreateCommandPool", [&](auto* out) {
                                            return fn.vkCreateCommandPool(dev, &pool_info, nullptr, out);
                                          }));
  RILL_ASSIGN_OR_RETURN(objects.cb, vk::allocate_command_buffer(*ctx->device, ctx->faults, objects.pool.get()));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // Replays put the same command buffer into one batch several times.
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  RILL_DEVICE_RETURN_IF_ERROR(*ctx->device, fn.vkBeginCommandBuffer(cb(), &begin));
  cb_recording = true;
  if (ctx->instance->debug_utils() && !options.label.empty()) {
    VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    label.pLabelName = options.label.c_str();
    ctx->instance->begin_label(cb(), label);
  }
  return Status::ok();
}

Status SequenceImpl::ensure_descriptor_pool(uint32_t storage, uint32_t texel) {
  PoolRoom& room = pool_room;
  if (room.sets > 0 && room.storage >= storage && room.texel >= texel) {
    --room.sets;
    room.storage -= storage;
    room.texel -= texel;
    return Status::ok();
  }
  // Sized for sets of up to 8 storage and 4 texel buffers on average, and at least for this one.
  const PoolRoom fresh{kSetsPerPool, std::max(kSetsPerPool * 8, storage), std::max(kSetsPerPool * 4, texel)};
  VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, fresh.storage},
                                  {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kSetsPerPool},
                                  {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, fresh.texel}};
  VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  info.maxSets = kSetsPerPool;
  info.poolSizeCount = 3;
  info.pPoolSizes = sizes;
  const auto& fn = ctx->device->fn();
  VkDevice dev = ctx->device->handle();
  RILL_ASSIGN_OR_RETURN(auto pool, vk::create_unique<vk::UniqueDescriptorPool>(
                                       *ctx->device, ctx->faults, "vkCreateDescriptorPool",
                                       [&](auto* out) { return fn.vkCreateDescriptorPool(dev, &info, nullptr, out); }));
  objects.descriptor_pools.push_back(std::move(pool));
  room = {fresh.sets - 1, fresh.storage - storage, fresh.texel - texel};
  return Status::ok();
}

Result<uint32_t> SequenceImpl::next_timestamp_pair(VkQueryPool* out) {
  if (objects.query_pools.empty() || queries_used + 2 > kQueriesPerPool) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = kQueriesPerPool;
    const auto& fn = ctx->device->fn();
    VkDevice dev = ctx->device->handle();
    RILL_ASSIGN_OR_RETURN(auto pool, vk::create_unique<vk::UniqueQueryPool>(
                                         *ctx->device, ctx->faults, "vkCreateQueryPool", [&](auto* pool_out) {
                                           return fn.vkCreateQueryPool(dev, &info, nullptr, pool_out);
                                         }));
    // Reset inside the command buffer so that every replay starts from reset queries.
    fn.vkCmdResetQueryPool(cb(), pool.get(), 0, kQueriesPerPool);
    objects.query_pools.push_back(std::move(pool));
    ++ctx->query_pools_created;
    queries_used = 0;
  }
  *out = objects.query_pools.back().get();
  const uint32_t first = queries_used;
  queries_used += 2;
  return first;
}

void SequenceImpl::reference(const std::shared_ptr<TensorStorage>& t) {
  // Shared ownership: a replay never touches memory whose Tensor the application dropped.
  if (std::find(referenced.begin(), referenced.end(), t) == referenced.end()) referenced.push_back(t);
}

Status SequenceImpl::finish() {
  if (state == State::kFinished) return Status::ok();
  // A broken sequence is never submitted, whatever its message (one may have run out of memory).
  if (state == State::kBroken) return broken.is_ok() ? out_of_host_memory("sequence: broken earlier") : broken;
  const auto& fn = ctx->device->fn();
  // Everything this sequence wrote -> whatever runs next: the next replay, later submissions, and
  // host reads of mapped or staging memory after the fence.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          kAllWorkAccess | VK_ACCESS_HOST_READ_BIT};
  fn.vkCmdPipelineBarrier(cb(), kWorkStages, kWorkStages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0,
                          nullptr);
  ++stats.barriers;
  if (ctx->instance->debug_utils() && !options.label.empty()) ctx->instance->end_label(cb());
  VkResult r = fn.vkEndCommandBuffer(cb());
  cb_recording = false;  // a failed end leaves the command buffer invalid, not recording
  if (r != VK_SUCCESS) {
    state = State::kBroken;
    broken = ctx->device->check(r, "vkEndCommandBuffer");
    return broken;
  }
  state = State::kFinished;
  return Status::ok();
}

Status SequenceImpl::submit(uint32_t times) {
  if (times == 0) return invalid_argument("submit: times must be >= 1");
  // One submission holds a handle per replay, and runs them all before anything can be read: past
  // a million, a caller's mistake (or a hang in the making) rather than a workload.
  if (times > Sequence::kMaxReplays)
    return invalid_argument("submit: " + std::to_string(times) + " replays in one call, more than " +
                            std::to_string(Sequence::kMaxReplays) + "; submit in several calls");
  RILL_RETURN_IF_ERROR(ctx->check_usable());
  RILL_RETURN_IF_ERROR(finish());
  std::vector<VkCommandBuffer> batch(times, cb());
  submit_us = ctx->profiler.now_us();
  RILL_ASSIGN_OR_RETURN(uint64_t serial, ctx->submissions->submit(batch));
  last_serial = serial;
  submitted_times = times;
  for (auto& t : referenced) t->mark_used(serial);
  stats.submissions += times;
  return Status::ok();
}

Status SequenceImpl::wait() {
  RILL_RETURN_IF_ERROR(ctx->submissions->wait(last_serial));
  timings_serial = last_serial;
  if (ctx->profiler.enabled() && options.timestamps && !timed.empty() && profiled_serial != last_serial) {
    profiled_serial = last_serial;
    // The wait succeeded: running out of host memory here loses the profile's GPU events, not that.
    try {
      RILL_RETURN_IF_ERROR(add_gpu_events());
    } catch (const std::bad_alloc&) {
    }
  }
  return Status::ok();
}

Status SequenceImpl::add_gpu_events() {
  RILL_ASSIGN_OR_RETURN(std::vector<DispatchTiming> timings, read_timings());
  // GPU times are placed on the host clock from the submit (an approximation: the device clock
  // is not calibrated against the host's).
  for (const DispatchTiming& t : timings) {
    ProfileEvent e;
    e.track = ProfileEvent::Track::kGpu;
    e.name = t.label;
    e.category = "dispatch";
    e.start_us = submit_us + t.start_ms * 1e3;
    e.duration_us = t.gpu_ms * 1e3;
    e.kernel = t.kernel;
    e.variant = t.variant;
    for (int i = 0; i < 3; ++i) e.groups[i] = t.groups[size_t(i)];
    e.flops = t.flops;
    e.bytes = t.bytes;
    e.replays = submitted_times;
    e.pipeline = t.pipeline;
    ctx->profiler.add(std::move(e));
  }
  return Status::ok();
}

Result<std::vector<DispatchTiming>> SequenceImpl::read_timings() const {
  const auto& fn = ctx->device->fn();
  const DeviceCaps& caps = ctx->device->info().caps;
  const uint64_t mask = caps.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << caps.timestamp_valid_bits) - 1);
  std::vector<DispatchTiming> out = timed;
  std::vector<uint64_t> ticks(2 * out.size());
  size_t done = 0;
  for (const vk::UniqueQueryPool& pool : objects.query_pools) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(kQueriesPerPool, ticks.size() - done));
    if (n == 0) break;
    VkResult r =
        fn.vkGetQueryPoolResults(ctx->device->handle(), pool.get(), 0, n, n * sizeof(uint64_t), ticks.data() + done,
                                 sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) return ctx->device->check(r, "vkGetQueryPoolResults");
    done += n;
  }
  const double ns_per_tick = caps.timestamp_period_ns;
  const uint64_t first = out.empty() ? 0 : ticks[0] & mask;
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t begin = ticks[2 * i] & mask, end = ticks[2 * i + 1] & mask;
    out[i].gpu_ms = static_cast<double>((end - begin) & mask) * ns_per_tick * 1e-6;
    out[i].start_ms = static_cast<double>((begin - first) & mask) * ns_per_tick * 1e-6;
  }
  return out;
}

}  // namespace detail

// ---- public wrappers ----

SpecValue spec_uint(std::string name, uint32_t value) { return {std::move(name), value}; }
SpecValue spec_int(std::string name, int32_t value) { return {std::move(name), static_cast<uint32_t>(value)}; }
SpecValue spec_float(std::string name, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return {std::move(name), bits};
}

Sequence::Sequence(std::unique_ptr<detail::SequenceImpl> impl) : impl_(std::move(impl)) {}
Sequence::Sequence(Sequence&&) noexcept = default;
Sequence& Sequence::operator=(Sequence&&) noexcept = default;
Sequence::~Sequence() = default;

Result<Sequence> Context::sequence(const SequenceOptions& options) {
  RILL_RETURN_IF_ERROR(impl_->check_usable());
  const bool has_timestamps = impl_->device->info().caps.timestamps;
  if (options.timestamps && !has_timestamps)
    return unavailable("this device's compute queue has no timestamp support; profile without timestamps");
  SequenceOptions opts = options;
  // Profiling times every dispatch; without device timestamps only the host track is recorded.
  if (impl_->profiler.enabled() && has_timestamps) opts.timestamps = true;
  return detail::host_memory_guarded("sequence", [&]() -> Result<Sequence> {
    auto impl = std::make_unique<detail::SequenceImpl>(impl_, std::move(opts));
    RILL_RETURN_IF_ERROR(impl->begin());
    return detail::Access::sequence(std::move(impl));
  });
}

Status Sequence::dispatch(const Dispatch& d) {
  return impl_->recording_guarded([&] { return impl_->record_dispatch(d); });
}
Status Sequence::copy(const Tensor& src, const Tensor& dst) {
  return impl_->recording_guarded(
      [&] { return impl_->record_transfer(detail::SequenceImpl::Transfer::kCopy, &src, &dst, {}, nullptr); });
}
Status Sequence::fill_zero(const Tensor& dst) {
  return impl_->recording_guarded(
      [&] { return impl_->record_transfer(detail::SequenceImpl::Transfer::kZero, nullptr, &dst, {}, nullptr); });
}
Status Sequence::upload(const Tensor& dst, std::span<const uint8_t> bytes) {
  return impl_->recording_guarded(
      [&] { return impl_->record_transfer(detail::SequenceImpl::Transfer::kUpload, nullptr, &dst, bytes, nullptr); });
}
Result<DownloadId> Sequence::download(const Tensor& src) {
  DownloadId id;
  RILL_RETURN_IF_ERROR(impl_->recording_guarded(
      [&] { return impl_->record_transfer(detail::SequenceImpl::Transfer::kDownload, &src, nullptr, {}, &id); }));
  return id;
}
Status Sequence::finish() {
  return detail::host_memory_guarded("finish", [&] { return impl_->finish(); });
}
// Nothing is submitted before the last allocation, and nothing allocates after (Submissions::submit).
Status Sequence::submit(uint32_t times) {
  return detail::host_memory_guarded("submit", [&] { return impl_->submit(times); });
}
// The wait has ended when profiling's events allocate: a failure there loses only the events.
Status Sequence::wait() {
  return detail::host_memory_guarded("wait", [&] { return impl_->wait(); });
}
Status Sequence::run(uint32_t times) {
  RILL_RETURN_IF_ERROR(submit(times));
  return wait();
}
SequenceStats Sequence::stats() const { return impl_->stats; }
const DeviceInfo& Sequence::device() const { return impl_->ctx->device->info(); }
std::string_view Sequence::kernel_preference() const { return impl_->ctx->pipelines->preferred_variant(); }

namespace {

// OK where download `id` of `s` has finished and can be read; `op` names the call in errors.
Status check_readable(const detail::SequenceImpl& s, DownloadId id, const char* op) {
  if (id.index >= s.downloads.size())
    return invalid_argument(std::string(op) + ": unknown download id " + std::to_string(id.index));
  if (s.last_serial == 0) return failed_precondition(std::string(op) + ": the sequence has not been submitted");
  if (s.ctx->submissions->completed() < s.last_serial)
    return failed_precondition(std::string(op) + ": the sequence is still running; call wait() first");
  return Status::ok();
}

}  // namespace

Status Sequence::read(DownloadId id, std::span<uint8_t> bytes) const {
  const auto& s = *impl_;
  RILL_RETURN_IF_ERROR(check_readable(s, id, "read"));
  const auto& d = s.downloads[id.index];
  if (bytes.size() != d.bytes)
    return invalid_argument("read: buffer has " + std::to_string(bytes.size()) + " bytes, the download has " +
                            std::to_string(d.bytes));
  std::memcpy(bytes.data(), d.staging.mapped(), d.bytes);
  return Status::ok();
}

Result<std::vector<float>> Sequence::read_floats(DownloadId id) const {
  RILL_RETURN_IF_ERROR(check_readable(*impl_, id, "read_floats"));
  const auto& d = impl_->downloads[id.index];
  if (d.dtype != DType::kF32 && d.dtype != DType::kF16)
    return invalid_argument(std::string("read_floats: the download is ") + dtype_name(d.dtype) + ", not f32 or f16");
  const size_t count = d.bytes / dtype_size(d.dtype);
  std::vector<float> out;
  try {  // a download may be large: out of host memory is an error, not an exception
    out.resize(count);
  } catch (const std::bad_alloc&) {
    return detail::resource_exhausted_noexcept(
        [&] { return "read_floats: no host memory for " + std::to_string(count) + " values"; });
  }
  // Straight from the staging copy into the result: one copy of a download that may be large.
  const uint8_t* staged = d.staging.mapped();
  if (d.dtype == DType::kF32) {
    std::memcpy(out.data(), staged, d.bytes);
  } else {
    for (size_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, staged + 2 * i, 2);
      out[i] = half_to_float(h);
    }
  }
  return out;
}

Result<std::vector<DispatchTiming>> Sequence::timings() const {
  return detail::host_memory_guarded("timings", [&]() -> Result<std::vector<DispatchTiming>> {
    const auto& s = *impl_;
    if (!s.options.timestamps) return failed_precondition("timings: the sequence was made without timestamps");
    if (s.timings_serial == 0 || s.ctx->submissions->completed() < s.last_serial)
      return failed_precondition("timings: no completed submission; call run() or wait() first");
    return s.read_timings();
  });
}

}  // namespace rill
