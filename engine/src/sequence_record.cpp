// Recording into a sequence: a dispatch or a transfer is checked against its kernel and tensors,
// then recorded after the barrier its accesses need.
#include <algorithm>
#include <cstring>

#include "access.hpp"
#include "core/checked_math.hpp"
#include "sequence_impl.hpp"
#include "vk/texel_views.hpp"

namespace rill::detail {

Status SequenceImpl::insert_barrier_if_needed(const std::vector<HazardTracker::Access>& accesses) {
  if (hazards.conflicts(accesses) == 0 || !auto_barriers) return Status::ok();
  // Earlier dispatches/copies in this sequence -> this one, which touches what they wrote (or
  // writes what they read). The tracker forgets every earlier access after this barrier, so the
  // barrier orders all of them (every stage they ran in) before every later access of either
  // stage the recorder uses, not only the conflicting pair: a dispatch that writes X, then a barrier
  // for some other conflict, then a fill of X would otherwise be unordered with the first write.
  const VkPipelineStageFlags src = hazards.pending_stages();
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, writes_of(src), reads_and_writes_of(kWorkStages)};
  ctx->device->fn().vkCmdPipelineBarrier(cb(), src, kWorkStages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  hazards.barrier();
  ++stats.barriers;
  return Status::ok();
}

namespace {

// Room for one more element, growing geometrically (may throw std::bad_alloc).
template <typename T>
void make_room(std::vector<T>& v) {
  if (v.size() == v.capacity()) v.reserve(std::max<size_t>(8, 2 * v.capacity()));
}

}  // namespace

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
  // A texel view may reach past its tensor's bytes into its allocation's padding (texel_views.hpp
  // says why), and a view of rows into its parent's next rows: the hazard tracker is told the view's
  // whole range, which the validation layer (and a driver) takes as read.
  auto texel_view_range = [&](const TensorStorage& s) {
    const uint64_t view_bytes = vk::texel_view_bytes(s.bytes, s.allocation.size);
    return view_bytes / (4 * dtype_size(s.dtype)) > caps.max_texel_buffer_elements ? s.bytes : view_bytes;
  };
  std::vector<HazardTracker::Access> accesses;
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    const Tensor* t = d.bindings[i];
    const vk::BindingInfo& b = shader->bindings[i];
    const std::string where = "kernel " + kernel + " binding " + std::to_string(i) + " (" + std::string(b.name) + ")";
    if (t == nullptr || !t->valid()) return invalid_argument(where + ": no tensor given");
    if (detail::Access::storage(*t)->context != ctx)
      return invalid_argument(where + ": tensor '" + t->name() + "' belongs to another context");
    if (b.kind == vk::DescriptorKind::kUniformBuffer)
      return unimplemented(where + ": uniform-buffer bindings are not supported; use a storage buffer");
    if (b.kind == vk::DescriptorKind::kUniformTexelBuffer) {
      const TensorStorage& s = *detail::Access::storage(*t);
      if ((t->dtype() == DType::kU32) != b.uint_texels)
        return invalid_argument(
            where + ": " +
            (b.uint_texels ? "a usamplerBuffer reads u32 tensors" : "a samplerBuffer reads f32 or f16 tensors") +
            "; '" + t->name() + "' is " + dtype_name(t->dtype()));
      RILL_RETURN_IF_ERROR(vk::texel_format(t->dtype(), caps, where).status());
      RILL_RETURN_IF_ERROR(vk::check_texel_view(t->dtype(), s.offset(), s.bytes, caps, where));
    } else if (t->size_bytes() > caps.max_storage_buffer_range)
      return out_of_range(where + ": " + t->describe() + " is " + std::to_string(t->size_bytes()) +
                          " bytes, more than the device's maxStorageBufferRange of " +
                          std::to_string(caps.max_storage_buffer_range) + "; split it");
    const TensorStorage& s = *detail::Access::storage(*t);
    const uint64_t range = b.kind == vk::DescriptorKind::kUniformTexelBuffer ? texel_view_range(s) : s.bytes;
    accesses.push_back({s.buffer(), s.offset(), range, b.access != vk::BindingAccess::kReadOnly,
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
  uint32_t storage = 0, texel = 0;
  for (const vk::BindingInfo& b : shader->bindings)
    (b.kind == vk::DescriptorKind::kUniformTexelBuffer ? texel : storage)++;
  // Texel views first (made once per tensor): a failure leaves nothing recorded.
  std::vector<VkBufferView> views(d.bindings.size(), VK_NULL_HANDLE);
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    if (shader->bindings[i].kind != vk::DescriptorKind::kUniformTexelBuffer) continue;
    TensorStorage& s = *detail::Access::storage(*d.bindings[i]);
    if (!s.texel_view) {
      RILL_ASSIGN_OR_RETURN(VkFormat format, vk::texel_format(s.dtype, caps, kernel));
      // Past the tensor's own bytes only within its allocation, and only where the device takes it.
      RILL_ASSIGN_OR_RETURN(s.texel_view, vk::create_texel_view(*ctx->device, ctx->faults, s.buffer(), s.offset(),
                                                                texel_view_range(s), format));
    }
    views[i] = s.texel_view.get();
  }
  RILL_RETURN_IF_ERROR(ensure_descriptor_pool(storage, texel));
  const auto& fn = ctx->device->fn();
  VkDevice dev = ctx->device->handle();
  VkDescriptorSetAllocateInfo set_alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_alloc.descriptorPool = objects.descriptor_pools.back().get();
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &pipeline.set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult r = ctx->faults.run([&] { return fn.vkAllocateDescriptorSets(dev, &set_alloc, &set); });
  if (r != VK_SUCCESS) return ctx->device->check(r, "vkAllocateDescriptorSets");
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
    writes[i].descriptorType = vk::descriptor_type(shader->bindings[i].kind);
    if (views[i] != VK_NULL_HANDLE)
      writes[i].pTexelBufferView = &views[i];
    else
      writes[i].pBufferInfo = &infos[i];
  }
  fn.vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

  RILL_RETURN_IF_ERROR(insert_barrier_if_needed(accesses));
  const std::string label = d.label.empty() ? kernel : std::string(d.label);
  const bool labels = ctx->instance->debug_utils();
  if (labels) {
    VkDebugUtilsLabelEXT l{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    l.pLabelName = label.c_str();
    ctx->instance->begin_label(cb(), l);
  }
  // Its start: when the work before it has finished (at the top of the pipe a GPU writes it at once,
  // and the dispatch's time took in the drain of the one it waits for).
  if (timed_dispatch) fn.vkCmdWriteTimestamp(cb(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, query);
  fn.vkCmdBindPipeline(cb(), VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
  fn.vkCmdBindDescriptorSets(cb(), VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &set, 0, nullptr);
  if (!d.push.bytes.empty())
    fn.vkCmdPushConstants(cb(), pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          static_cast<uint32_t>(d.push.bytes.size()), d.push.bytes.data());
  fn.vkCmdDispatch(cb(), d.groups[0], d.groups[1], d.groups[2]);
  if (timed_dispatch) {
    fn.vkCmdWriteTimestamp(cb(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, query + 1);
    timed.push_back({label, kernel, std::string(shader->variant.empty() ? "default" : shader->variant), d.groups,
                     d.flops, d.bytes, 0.0, 0.0, pipeline.id});
  }
  if (labels) ctx->instance->end_label(cb());
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
  if (kind == Transfer::kCopy) {
    // Vulkan forbids a copy between overlapping ranges: a tensor onto itself is nothing to do, a
    // partial overlap (two views of one buffer) an error.
    const TensorStorage &from = *detail::Access::storage(*src), &to = *detail::Access::storage(*dst);
    if (from.overlaps(to)) {
      if (from.offset() == to.offset()) return Status::ok();
      return invalid_argument("copy from " + src->describe() + " to " + dst->describe() +
                              ": the two overlap in memory");
    }
  }
  if (kind == Transfer::kZero && dst->size_bytes() % 4 != 0) {
    // Vulkan fills whole 4-byte words: past the end of a whole tensor that is its allocation's
    // padding, but inside a tensor (a rows() view) it is the next element.
    const TensorStorage& view = *detail::Access::storage(*dst);
    if (view.parent && view.offset() + view.bytes < view.parent->offset() + view.parent->bytes)
      return invalid_argument("fill_zero: " + dst->describe() + " is " + std::to_string(dst->size_bytes()) +
                              " bytes, not whole 4-byte words, and the tensor it views goes on after it (its next "
                              "element would be cleared too); zero a view of whole words, or the whole tensor");
  }
  if (kind == Transfer::kUpload && bytes.size() != dst->size_bytes())
    return invalid_argument("upload to " + dst->describe() + ": got " + std::to_string(bytes.size()) +
                            " bytes, the tensor has " + std::to_string(dst->size_bytes()));
  vk::Allocation stage;
  if (kind == Transfer::kUpload || kind == Transfer::kDownload) {
    // Room for the staging memory's record first: growing the list after allocating it could run
    // out of host memory and lose the allocation.
    if (kind == Transfer::kUpload)
      make_room(staging);
    else
      make_room(downloads);
    const uint64_t size = kind == Transfer::kUpload ? dst->size_bytes() : src->size_bytes();
    RILL_ASSIGN_OR_RETURN(stage, ctx->allocate(size, vk::PoolKind::kStaging));
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
      fn.vkCmdCopyBuffer(cb(), detail::Access::storage(*src)->buffer(), detail::Access::storage(*dst)->buffer(), 1,
                         &region);
      break;
    }
    case Transfer::kUpload: {
      VkBufferCopy region{stage.offset, detail::Access::storage(*dst)->offset(), dst->size_bytes()};
      fn.vkCmdCopyBuffer(cb(), stage.buffer(), detail::Access::storage(*dst)->buffer(), 1, &region);
      break;
    }
    case Transfer::kDownload: {
      VkBufferCopy region{detail::Access::storage(*src)->offset(), stage.offset, src->size_bytes()};
      fn.vkCmdCopyBuffer(cb(), detail::Access::storage(*src)->buffer(), stage.buffer(), 1, &region);
      break;
    }
    case Transfer::kZero:
      // Fill needs a multiple of 4 bytes; allocations are padded to 256, so rounding up stays ours.
      fn.vkCmdFillBuffer(cb(), detail::Access::storage(*dst)->buffer(), detail::Access::storage(*dst)->offset(),
                         align_up(dst->size_bytes(), 4), 0);
      break;
  }
  hazards.add(accesses);
  if (src) reference(detail::Access::storage(*src));
  if (dst) reference(detail::Access::storage(*dst));
  ++stats.copies;
  return Status::ok();
}

}  // namespace rill::detail
