// rill::Sequence: recording with automatic barriers, replayed submission, downloads, timings.
#include <algorithm>
#include <cstring>

#include "access.hpp"
#include "core/checked_math.hpp"
#include "rill/half.hpp"
#include "sequence_impl.hpp"

namespace rill {
namespace detail {

Sequence Access::sequence(std::unique_ptr<SequenceImpl> impl) { return Sequence(std::move(impl)); }

}  // namespace detail

namespace detail {
namespace {

constexpr uint32_t kSetsPerPool = 64;
constexpr VkPipelineStageFlags kWorkStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kAllWorkAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

// The access bits of `stages` (compute and transfer only), as the barrier rules require.
VkAccessFlags writes_of(VkPipelineStageFlags stages) {
  VkAccessFlags a = 0;
  if (stages & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) a |= VK_ACCESS_SHADER_WRITE_BIT;
  if (stages & VK_PIPELINE_STAGE_TRANSFER_BIT) a |= VK_ACCESS_TRANSFER_WRITE_BIT;
  return a;
}
VkAccessFlags reads_and_writes_of(VkPipelineStageFlags stages) {
  VkAccessFlags a = writes_of(stages);
  if (stages & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) a |= VK_ACCESS_SHADER_READ_BIT;
  if (stages & VK_PIPELINE_STAGE_TRANSFER_BIT) a |= VK_ACCESS_TRANSFER_READ_BIT;
  return a;
}

bool overlaps(const HazardTracker::Access& a, const HazardTracker::Access& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

}  // namespace

VkPipelineStageFlags HazardTracker::conflicts(const std::vector<Access>& next) const {
  VkPipelineStageFlags stages = 0;
  for (const Access& n : next)
    for (const Access& p : pending_)
      if ((p.write || n.write) && overlaps(p, n)) stages |= p.stage;  // RAW, WAW, WAR
  return stages;
}

SequenceImpl::~SequenceImpl() {
  if (!ctx) return;
  ContextImpl* c = ctx.get();
  // End an unfinished recording first: the Khronos validation layer (1.3.239) leaks its state for
  // a command buffer that is destroyed while still recording.
  if (state == State::kRecording && cb != VK_NULL_HANDLE) {
    if (c->instance->debug_utils() && !options.label.empty()) vkCmdEndDebugUtilsLabelEXT(cb);
    c->device->fn().vkEndCommandBuffer(cb);
  }
  // The GPU may still run this sequence: its objects go when its last submission has finished.
  c->submissions->retire(last_serial, [c, pool = pool, cmd = cb, dpools = descriptor_pools, qpools = query_pools,
                                       staging = staging, downloads = downloads] {
    const auto& fn = c->device->fn();
    VkDevice dev = c->device->handle();
    for (VkQueryPool q : qpools) fn.vkDestroyQueryPool(dev, q, nullptr);
    for (VkDescriptorPool p : dpools) fn.vkDestroyDescriptorPool(dev, p, nullptr);
    // Freed explicitly before its pool: the validation layer (1.3.239) leaks otherwise.
    if (cmd != VK_NULL_HANDLE) fn.vkFreeCommandBuffers(dev, pool, 1, &cmd);
    if (pool != VK_NULL_HANDLE) fn.vkDestroyCommandPool(dev, pool, nullptr);
    for (const auto& a : staging) c->allocator->release(a);
    for (const auto& d : downloads) c->allocator->release(d.staging);
  });
}

Status SequenceImpl::begin() {
  const auto& fn = ctx->device->fn();
  VkDevice dev = ctx->device->handle();
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = ctx->device->queue_family();
  VkResult r = ctx->faults.run([&] { return fn.vkCreateCommandPool(dev, &pool_info, nullptr, &pool); });
  if (r != VK_SUCCESS) return ctx->device->check(r, "vkCreateCommandPool");
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  r = ctx->faults.run([&] { return fn.vkAllocateCommandBuffers(dev, &alloc, &cb); });
  if (r != VK_SUCCESS) return ctx->device->check(r, "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // Replays put the same command buffer into one batch several times.
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  RILL_DEVICE_RETURN_IF_ERROR(*ctx->device, fn.vkBeginCommandBuffer(cb, &begin));
  if (ctx->instance->debug_utils() && !options.label.empty()) {
    VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    label.pLabelName = options.label.c_str();
    vkCmdBeginDebugUtilsLabelEXT(cb, &label);
  }
  return Status::ok();
}

Status SequenceImpl::ensure_descriptor_pool() {
  if (sets_left_in_pool > 0) return Status::ok();
  VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 8},
                                  {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kSetsPerPool}};
  VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  info.maxSets = kSetsPerPool;
  info.poolSizeCount = 2;
  info.pPoolSizes = sizes;
  VkDescriptorPool p = VK_NULL_HANDLE;
  const auto& fn = ctx->device->fn();
  VkDevice dev = ctx->device->handle();
  VkResult r = ctx->faults.run([&] { return fn.vkCreateDescriptorPool(dev, &info, nullptr, &p); });
  if (r != VK_SUCCESS) return ctx->device->check(r, "vkCreateDescriptorPool");
  descriptor_pools.push_back(p);
  sets_left_in_pool = kSetsPerPool;
  return Status::ok();
}

Result<uint32_t> SequenceImpl::next_timestamp_pair(VkQueryPool* out) {
  if (query_pools.empty() || queries_used + 2 > kQueriesPerPool) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = kQueriesPerPool;
    VkQueryPool q = VK_NULL_HANDLE;
    const auto& fn = ctx->device->fn();
    VkDevice dev = ctx->device->handle();
    VkResult r = ctx->faults.run([&] { return fn.vkCreateQueryPool(dev, &info, nullptr, &q); });
    if (r != VK_SUCCESS) return ctx->device->check(r, "vkCreateQueryPool");
    query_pools.push_back(q);
    ++ctx->query_pools_created;
    queries_used = 0;
    // Reset inside the command buffer so that every replay starts from reset queries.
    fn.vkCmdResetQueryPool(cb, q, 0, kQueriesPerPool);
  }
  *out = query_pools.back();
  const uint32_t first = queries_used;
  queries_used += 2;
  return first;
}

void SequenceImpl::reference(const std::shared_ptr<TensorStorage>& t) {
  // Shared ownership: a replay never touches memory whose Tensor the application dropped.
  if (std::find(referenced.begin(), referenced.end(), t) == referenced.end()) referenced.push_back(t);
}

Status SequenceImpl::insert_barrier_if_needed(const std::vector<HazardTracker::Access>& accesses) {
  if (hazards.conflicts(accesses) == 0 || !auto_barriers) return Status::ok();
  // Earlier dispatches/copies in this sequence -> this one, which touches what they wrote (or
  // writes what they read). The tracker forgets every earlier access after this barrier, so the
  // barrier orders all of them (every stage they ran in) before every later access of either
  // stage the recorder uses, not only the conflicting pair: a dispatch that writes X, then a barrier
  // for some other conflict, then a fill of X would otherwise be unordered with the first write.
  const VkPipelineStageFlags src = hazards.pending_stages();
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, writes_of(src), reads_and_writes_of(kWorkStages)};
  ctx->device->fn().vkCmdPipelineBarrier(cb, src, kWorkStages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  hazards.barrier();
  ++stats.barriers;
  return Status::ok();
}

Status SequenceImpl::record_dispatch(const Dispatch& d) {
  if (state != State::kRecording)
    return failed_precondition("the sequence is no longer recording (it was finished or submitted)");
  RILL_RETURN_IF_ERROR(ctx->check_usable());
  RILL_ASSIGN_OR_RETURN(const vk::ShaderInfo* shader, ctx->pipelines->resolve(d.kernel, d.variant));
  const std::string kernel(d.kernel);
  const DeviceCaps& caps = ctx->device->info().caps;

  // Everything is checked before anything is recorded, so a bad call leaves the sequence intact.
  if (d.bindings.size() != shader->bindings.size())
    return invalid_argument("kernel " + kernel + " has " + std::to_string(shader->bindings.size()) +
                            " bindings; the dispatch gives " + std::to_string(d.bindings.size()));
  std::vector<HazardTracker::Access> accesses;
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    const Tensor* t = d.bindings[i];
    const vk::BindingInfo& b = shader->bindings[i];
    const std::string where = "kernel " + kernel + " binding " + std::to_string(i) + " (" + std::string(b.name) + ")";
    if (t == nullptr || !t->valid()) return invalid_argument(where + ": no tensor given");
    if (detail::Access::storage(*t)->context != ctx)
      return invalid_argument(where + ": tensor '" + t->name() + "' belongs to another context");
    if (b.kind != vk::DescriptorKind::kStorageBuffer)
      return unimplemented(where + ": uniform-buffer bindings are not supported; use a storage buffer");
    if (t->size_bytes() > caps.max_storage_buffer_range)
      return out_of_range(where + ": " + t->describe() + " is " + std::to_string(t->size_bytes()) +
                          " bytes, more than the device's maxStorageBufferRange of " +
                          std::to_string(caps.max_storage_buffer_range) + "; split it");
    const TensorStorage& s = *detail::Access::storage(*t);
    accesses.push_back({s.buffer(), s.offset(), s.bytes, b.access != vk::BindingAccess::kReadOnly,
                        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT});
  }
  if (d.push.bytes.size() != shader->push_constant_bytes)
    return invalid_argument("kernel " + kernel + " takes " + std::to_string(shader->push_constant_bytes) +
                            " bytes of push constants; the dispatch gives " + std::to_string(d.push.bytes.size()));
  if (!d.push.block.empty() && d.push.block != shader->push_block)
    return invalid_argument("kernel " + kernel + " takes push constants " + std::string(shader->push_block) +
                            "; the dispatch gives " + std::string(d.push.block));
  for (int i = 0; i < 3; ++i) {
    if (d.groups[i] == 0 || d.groups[i] > caps.max_workgroup_count[i])
      return invalid_argument("kernel " + kernel + ": workgroup count " + std::to_string(d.groups[i]) +
                              " in dimension " + std::to_string(i) + " is outside 1.." +
                              std::to_string(caps.max_workgroup_count[i]));
  }
  RILL_ASSIGN_OR_RETURN(vk::Pipeline pipeline, ctx->pipelines->get(*shader, d.spec));
  RILL_RETURN_IF_ERROR(ensure_descriptor_pool());
  const auto& fn = ctx->device->fn();
  VkDevice dev = ctx->device->handle();
  VkDescriptorSetAllocateInfo set_alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_alloc.descriptorPool = descriptor_pools.back();
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &pipeline.set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult r = ctx->faults.run([&] { return fn.vkAllocateDescriptorSets(dev, &set_alloc, &set); });
  if (r != VK_SUCCESS) return ctx->device->check(r, "vkAllocateDescriptorSets");
  --sets_left_in_pool;
  VkQueryPool query_pool = VK_NULL_HANDLE;
  uint32_t query = 0;
  const bool timed_dispatch = options.timestamps;
  if (timed_dispatch) {
    RILL_ASSIGN_OR_RETURN(query, next_timestamp_pair(&query_pool));
  }

  std::vector<VkDescriptorBufferInfo> infos(d.bindings.size());
  std::vector<VkWriteDescriptorSet> writes(d.bindings.size());
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    const TensorStorage& s = *detail::Access::storage(*d.bindings[i]);
    infos[i] = {s.buffer(), s.offset(), s.bytes};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  fn.vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

  RILL_RETURN_IF_ERROR(insert_barrier_if_needed(accesses));
  const std::string label = d.label.empty() ? kernel : std::string(d.label);
  const bool labels = ctx->instance->debug_utils();
  if (labels) {
    VkDebugUtilsLabelEXT l{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    l.pLabelName = label.c_str();
    vkCmdBeginDebugUtilsLabelEXT(cb, &l);
  }
  if (timed_dispatch) fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, query_pool, query);
  fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
  fn.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &set, 0, nullptr);
  if (!d.push.bytes.empty())
    fn.vkCmdPushConstants(cb, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          static_cast<uint32_t>(d.push.bytes.size()), d.push.bytes.data());
  fn.vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
  if (timed_dispatch) {
    fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, query + 1);
    timed.push_back({label, kernel, std::string(shader->variant.empty() ? "default" : shader->variant), d.groups,
                     d.flops, d.bytes, 0.0, 0.0});
  }
  if (labels) vkCmdEndDebugUtilsLabelEXT(cb);
  hazards.add(accesses);
  for (const Tensor* t : d.bindings) reference(detail::Access::storage(*t));
  ++stats.dispatches;
  return Status::ok();
}

Status SequenceImpl::record_transfer(Transfer kind, const Tensor* src, const Tensor* dst,
                                     std::span<const uint8_t> bytes, DownloadId* download) {
  if (state != State::kRecording)
    return failed_precondition("the sequence is no longer recording (it was finished or submitted)");
  RILL_RETURN_IF_ERROR(ctx->check_usable());
  for (const Tensor* t : {src, dst}) {
    if (t == nullptr) continue;
    if (!t->valid()) return invalid_argument("transfer: the tensor is empty");
    if (detail::Access::storage(*t)->context != ctx)
      return invalid_argument("transfer: tensor '" + t->name() + "' belongs to another context");
  }
  if (kind == Transfer::kCopy && src->size_bytes() != dst->size_bytes())
    return invalid_argument("copy from " + src->describe() + " to " + dst->describe() + ": sizes differ (" +
                            std::to_string(src->size_bytes()) + " vs " + std::to_string(dst->size_bytes()) + " bytes)");
  if (kind == Transfer::kUpload && bytes.size() != dst->size_bytes())
    return invalid_argument("upload to " + dst->describe() + ": got " + std::to_string(bytes.size()) +
                            " bytes, the tensor has " + std::to_string(dst->size_bytes()));
  vk::Allocation stage;
  if (kind == Transfer::kUpload || kind == Transfer::kDownload) {
    const uint64_t size = kind == Transfer::kUpload ? dst->size_bytes() : src->size_bytes();
    RILL_ASSIGN_OR_RETURN(stage, ctx->allocator->allocate(size, vk::PoolKind::kStaging));
    if (kind == Transfer::kUpload) {
      std::memcpy(stage.mapped(), bytes.data(), bytes.size());
      staging.push_back(stage);
    } else {
      downloads.push_back({stage, size, src->dtype()});
      download->index = static_cast<uint32_t>(downloads.size() - 1);
    }
  }
  std::vector<HazardTracker::Access> accesses;
  if (src)
    accesses.push_back({detail::Access::storage(*src)->buffer(), detail::Access::storage(*src)->offset(),
                        src->size_bytes(), false, VK_PIPELINE_STAGE_TRANSFER_BIT});
  if (dst)
    accesses.push_back({detail::Access::storage(*dst)->buffer(), detail::Access::storage(*dst)->offset(),
                        dst->size_bytes(), true, VK_PIPELINE_STAGE_TRANSFER_BIT});
  RILL_RETURN_IF_ERROR(insert_barrier_if_needed(accesses));
  const auto& fn = ctx->device->fn();
  switch (kind) {
    case Transfer::kCopy: {
      VkBufferCopy region{detail::Access::storage(*src)->offset(), detail::Access::storage(*dst)->offset(),
                          src->size_bytes()};
      fn.vkCmdCopyBuffer(cb, detail::Access::storage(*src)->buffer(), detail::Access::storage(*dst)->buffer(), 1,
                         &region);
      break;
    }
    case Transfer::kUpload: {
      VkBufferCopy region{stage.offset, detail::Access::storage(*dst)->offset(), dst->size_bytes()};
      fn.vkCmdCopyBuffer(cb, stage.block->buffer, detail::Access::storage(*dst)->buffer(), 1, &region);
      break;
    }
    case Transfer::kDownload: {
      VkBufferCopy region{detail::Access::storage(*src)->offset(), stage.offset, src->size_bytes()};
      fn.vkCmdCopyBuffer(cb, detail::Access::storage(*src)->buffer(), stage.block->buffer, 1, &region);
      break;
    }
    case Transfer::kZero:
      // Fill needs a multiple of 4 bytes; allocations are padded to 256, so rounding up stays ours.
      fn.vkCmdFillBuffer(cb, detail::Access::storage(*dst)->buffer(), detail::Access::storage(*dst)->offset(),
                         align_up(dst->size_bytes(), 4), 0);
      break;
  }
  hazards.add(accesses);
  if (src) reference(detail::Access::storage(*src));
  if (dst) reference(detail::Access::storage(*dst));
  ++stats.copies;
  return Status::ok();
}

Status SequenceImpl::finish() {
  if (state == State::kFinished) return Status::ok();
  if (state == State::kBroken) return broken;
  const auto& fn = ctx->device->fn();
  // Everything this sequence wrote -> whatever runs next: the next replay, later submissions, and
  // host reads of mapped or staging memory after the fence.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          kAllWorkAccess | VK_ACCESS_HOST_READ_BIT};
  fn.vkCmdPipelineBarrier(cb, kWorkStages, kWorkStages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                          0, nullptr);
  ++stats.barriers;
  if (ctx->instance->debug_utils() && !options.label.empty()) vkCmdEndDebugUtilsLabelEXT(cb);
  VkResult r = fn.vkEndCommandBuffer(cb);
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
  RILL_RETURN_IF_ERROR(ctx->check_usable());
  RILL_RETURN_IF_ERROR(finish());
  std::vector<VkCommandBuffer> batch(times, cb);
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
      ctx->profiler.add(std::move(e));
    }
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
  for (VkQueryPool q : query_pools) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(kQueriesPerPool, ticks.size() - done));
    if (n == 0) break;
    VkResult r = fn.vkGetQueryPoolResults(ctx->device->handle(), q, 0, n, n * sizeof(uint64_t), ticks.data() + done,
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
  auto impl = std::make_unique<detail::SequenceImpl>(impl_, std::move(opts));
  RILL_RETURN_IF_ERROR(impl->begin());
  return detail::Access::sequence(std::move(impl));
}

Status Sequence::dispatch(const Dispatch& d) { return impl_->record_dispatch(d); }
Status Sequence::copy(const Tensor& src, const Tensor& dst) {
  return impl_->record_transfer(detail::SequenceImpl::Transfer::kCopy, &src, &dst, {}, nullptr);
}
Status Sequence::fill_zero(const Tensor& dst) {
  return impl_->record_transfer(detail::SequenceImpl::Transfer::kZero, nullptr, &dst, {}, nullptr);
}
Status Sequence::upload(const Tensor& dst, std::span<const uint8_t> bytes) {
  return impl_->record_transfer(detail::SequenceImpl::Transfer::kUpload, nullptr, &dst, bytes, nullptr);
}
Result<DownloadId> Sequence::download(const Tensor& src) {
  DownloadId id;
  RILL_RETURN_IF_ERROR(impl_->record_transfer(detail::SequenceImpl::Transfer::kDownload, &src, nullptr, {}, &id));
  return id;
}
Status Sequence::finish() { return impl_->finish(); }
Status Sequence::submit(uint32_t times) { return impl_->submit(times); }
Status Sequence::wait() { return impl_->wait(); }
Status Sequence::run(uint32_t times) {
  RILL_RETURN_IF_ERROR(submit(times));
  return wait();
}
SequenceStats Sequence::stats() const { return impl_->stats; }
const DeviceInfo& Sequence::device() const { return impl_->ctx->device->info(); }
std::string_view Sequence::kernel_preference() const { return impl_->ctx->pipelines->preferred_variant(); }

Status Sequence::read(DownloadId id, std::span<uint8_t> bytes) const {
  const auto& s = *impl_;
  if (id.index >= s.downloads.size()) return invalid_argument("read: unknown download id " + std::to_string(id.index));
  if (s.last_serial == 0) return failed_precondition("read: the sequence has not been submitted");
  if (s.ctx->submissions->completed() < s.last_serial)
    return failed_precondition("read: the sequence is still running; call wait() first");
  const auto& d = s.downloads[id.index];
  if (bytes.size() != d.bytes)
    return invalid_argument("read: buffer has " + std::to_string(bytes.size()) + " bytes, the download has " +
                            std::to_string(d.bytes));
  std::memcpy(bytes.data(), d.staging.mapped(), d.bytes);
  return Status::ok();
}

Result<std::vector<float>> Sequence::read_floats(DownloadId id) const {
  if (id.index >= impl_->downloads.size()) return invalid_argument("read_floats: unknown download id");
  const auto& d = impl_->downloads[id.index];
  if (d.dtype != DType::kF32 && d.dtype != DType::kF16)
    return invalid_argument(std::string("read_floats: the download is ") + dtype_name(d.dtype) + ", not f32 or f16");
  std::vector<uint8_t> raw(d.bytes);
  RILL_RETURN_IF_ERROR(read(id, raw));
  std::vector<float> out(d.bytes / dtype_size(d.dtype));
  if (d.dtype == DType::kF32) {
    std::memcpy(out.data(), raw.data(), raw.size());
  } else {
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = half_to_float(h);
    }
  }
  return out;
}

Result<std::vector<DispatchTiming>> Sequence::timings() const {
  const auto& s = *impl_;
  if (!s.options.timestamps) return failed_precondition("timings: the sequence was made without timestamps");
  if (s.timings_serial == 0 || s.ctx->submissions->completed() < s.last_serial)
    return failed_precondition("timings: no completed submission; call run() or wait() first");
  return s.read_timings();
}

}  // namespace rill
