// Pipeline manager implementation.
#include "vk/pipelines.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

#include "core/file_io.hpp"
#include "core/log.hpp"
#include "platform/files.hpp"
#include "vk/pipeline_cache_file.hpp"
#include "vk/spirv_needs.hpp"
#include "vk/texel_views.hpp"

namespace rill::vk {
namespace {

constexpr uint64_t kMaxCacheFileBytes = 256ull << 20;

PipelineCacheIdentity identity_of(const Device& device) {
  PipelineCacheIdentity id;
  id.vendor_id = device.info().vendor_id;
  id.device_id = device.info().device_id;
  id.driver_version = device.info().driver_version;
  std::memcpy(id.uuid, device.pipeline_cache_uuid().data(), sizeof id.uuid);
  return id;
}

std::string spec_names(const ShaderInfo& shader) {
  std::string s;
  for (const auto& sc : shader.spec_constants) s += (s.empty() ? "" : ", ") + std::string(sc.name);
  return s.empty() ? "none" : s;
}

}  // namespace

// The driver's statistics of every executable of `pipeline` (a compute pipeline usually has one; a
// name gets its executable's name in front where there are several). Diagnostics only: a failed
// query gives what was read so far.
std::vector<PipelineStatistic> read_statistics(const Device& device, VkPipeline pipeline) {
  const auto& fn = device.fn();
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t count = 0;
  if (fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPipelineExecutablePropertiesKHR> executables(count);
  for (auto& e : executables) e = {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
  if (fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &count, executables.data()) != VK_SUCCESS)
    return {};
  std::vector<PipelineStatistic> out;
  for (uint32_t index = 0; index < count; ++index) {
    VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    executable.pipeline = pipeline;
    executable.executableIndex = index;
    uint32_t n = 0;
    if (fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(n);
    for (auto& s : stats) s = {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    const VkResult r = fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, &n, stats.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) continue;
    for (uint32_t i = 0; i < n; ++i) {
      const VkPipelineExecutableStatisticKHR& s = stats[i];
      PipelineStatistic stat;
      stat.name = (count > 1 ? std::string(executables[index].name) + ": " : std::string()) + s.name;
      stat.description = s.description;
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
          stat.value = s.value.b32 ? 1.0 : 0.0;
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
          stat.value = double(s.value.i64);
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
          stat.value = double(s.value.u64);
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
          stat.value = s.value.f64;
          break;
        default:
          continue;
      }
      out.push_back(std::move(stat));
    }
  }
  return out;
}

PipelineManager::PipelineManager(Device& device, FaultInjector& faults, detail::Profiler& profiler,
                                 std::string cache_path, std::string variant_override, bool capture_statistics)
    : device_(device),
      faults_(faults),
      profiler_(profiler),
      cache_path_(std::move(cache_path)),
      variant_override_(std::move(variant_override)),
      capture_statistics_(capture_statistics && device.info().caps.pipeline_statistics) {
  if (variant_override_.empty()) {
    if (const char* env = std::getenv("RILL_KERNEL_VARIANT")) variant_override_ = env;
  }
}

Status PipelineManager::init() {
  std::vector<uint8_t> initial;
  if (!cache_path_.empty()) {
    auto file = read_file(cache_path_, kMaxCacheFileBytes);
    if (file.is_ok()) {
      auto payload = decode_pipeline_cache(identity_of(device_), file.value());
      if (payload.is_ok()) {
        initial = std::move(payload).value();
        stats_.cache_loaded = true;
      } else {
        stats_.cache_rejected_reason = payload.status().message();
        log_warning("ignoring pipeline cache '" + cache_path_ + "': " + payload.status().message());
      }
    } else if (file.status().code() != StatusCode::kNotFound) {
      stats_.cache_rejected_reason = file.status().message();
      log_warning("ignoring pipeline cache '" + cache_path_ + "': " + file.status().message());
    }
  }
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = initial.size();
  info.pInitialData = initial.empty() ? nullptr : initial.data();
  auto create = [&](VkPipelineCache* out) {
    return device_.fn().vkCreatePipelineCache(device_.handle(), &info, nullptr, out);
  };
  auto cache = create_unique<UniquePipelineCache>(device_, faults_, "vkCreatePipelineCache", create);
  if (!cache.is_ok() && !initial.empty() && !device_.lost()) {
    // The driver refused data that passed our checks: start empty rather than fail.
    stats_.cache_loaded = false;
    stats_.cache_rejected_reason = "the driver rejected the cache data: " + cache.status().message();
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    cache = create_unique<UniquePipelineCache>(device_, faults_, "vkCreatePipelineCache", create);
  }
  RILL_ASSIGN_OR_RETURN(cache_, std::move(cache));
  return Status::ok();
}

std::string_view PipelineManager::preferred_variant() const {
  if (!variant_override_.empty()) return variant_override_;
  return device_.quirks().prefer_cpu_kernels ? "cpu" : "gpu";
}

Result<const ShaderInfo*> PipelineManager::resolve(std::string_view kernel, std::string_view variant) const {
  const ShaderInfo* by_variant[4] = {};  // explicit, override, device preference, default
  const std::string_view preferred = device_.quirks().prefer_cpu_kernels ? "cpu" : "gpu";  // device's own
  const ShaderInfo* any = nullptr;
  std::string known;
  for (const ShaderInfo& s : shader_registry()) {
    if (s.kernel != kernel) continue;
    if (!any) any = &s;
    const std::string_view name = s.variant.empty() ? std::string_view("default") : std::string_view(s.variant);
    known += (known.empty() ? "" : ", ") + std::string(name);
    if (!variant.empty() && name == variant) by_variant[0] = &s;  // "default" forces the unnamed variant
    if (!variant_override_.empty() && s.variant == variant_override_) by_variant[1] = &s;
    if (s.variant == preferred) by_variant[2] = &s;
    if (s.variant.empty()) by_variant[3] = &s;
  }
  if (!any) return not_found("no kernel named '" + std::string(kernel) + "' in the registry");
  if (!variant.empty()) {
    if (!by_variant[0])
      return not_found("kernel '" + std::string(kernel) + "' has no variant '" + std::string(variant) +
                       "' (it has: " + known + ")");
    return by_variant[0];
  }
  for (int i = 1; i < 4; ++i)
    if (by_variant[i]) return by_variant[i];
  return any;
}

Result<PipelineManager::Layout*> PipelineManager::layout_for(const ShaderInfo& shader) {
  auto it = layouts_.find(&shader);
  if (it != layouts_.end()) return &it->second;
  const auto& fn = device_.fn();
  VkDevice dev = device_.handle();
  Layout l;
  const DeviceCaps& caps = device_.info().caps;
  uint32_t storage_buffers = 0, texel_buffers = 0;
  for (const BindingInfo& b : shader.bindings) {
    storage_buffers += b.kind == DescriptorKind::kStorageBuffer ? 1 : 0;
    texel_buffers += b.kind == DescriptorKind::kUniformTexelBuffer ? 1 : 0;
  }
  if (storage_buffers > caps.max_storage_buffers_per_stage)
    return failed_precondition("kernel " + std::string(shader.kernel) + " binds " + std::to_string(storage_buffers) +
                               " storage buffers; " + device_.info().name + " allows " +
                               std::to_string(caps.max_storage_buffers_per_stage) + " per kernel");
  if (shader.push_constant_bytes > caps.max_push_constants_bytes)
    return failed_precondition("kernel " + std::string(shader.kernel) + " takes " +
                               std::to_string(shader.push_constant_bytes) + " bytes of push constants; " +
                               device_.info().name + " allows " + std::to_string(caps.max_push_constants_bytes));
  if (texel_buffers > caps.max_sampled_images_per_stage)
    return failed_precondition("kernel " + std::string(shader.kernel) + " binds " + std::to_string(texel_buffers) +
                               " texel buffers; " + device_.info().name + " allows " +
                               std::to_string(caps.max_sampled_images_per_stage) + " per kernel");
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (const BindingInfo& b : shader.bindings) {
    VkDescriptorSetLayoutBinding lb{};
    lb.binding = b.binding;
    lb.descriptorType = descriptor_type(b.kind);
    lb.descriptorCount = 1;
    lb.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    bindings.push_back(lb);
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = static_cast<uint32_t>(bindings.size());
  set_info.pBindings = bindings.data();
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, shader.push_constant_bytes};
  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  const std::vector<uint32_t> words = shader.spirv_words();
  module_info.codeSize = words.size() * 4;
  module_info.pCode = words.data();

  const std::string what = "creating the layout of kernel " + std::string(shader.kernel);
  RILL_ASSIGN_OR_RETURN(l.module, create_unique<UniqueShaderModule>(device_, faults_, what, [&](auto* out) {
                          return fn.vkCreateShaderModule(dev, &module_info, nullptr, out);
                        }));
  RILL_ASSIGN_OR_RETURN(l.set_layout, create_unique<UniqueDescriptorSetLayout>(device_, faults_, what, [&](auto* out) {
                          return fn.vkCreateDescriptorSetLayout(dev, &set_info, nullptr, out);
                        }));
  const VkDescriptorSetLayout set_layout = l.set_layout.get();
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout;
  layout_info.pushConstantRangeCount = shader.push_constant_bytes > 0 ? 1 : 0;
  layout_info.pPushConstantRanges = &range;
  RILL_ASSIGN_OR_RETURN(l.layout, create_unique<UniquePipelineLayout>(device_, faults_, what, [&](auto* out) {
                          return fn.vkCreatePipelineLayout(dev, &layout_info, nullptr, out);
                        }));
  return &layouts_.emplace(&shader, std::move(l)).first->second;
}

Result<Pipeline> PipelineManager::get(const ShaderInfo& shader, std::span<const SpecValue> spec) {
  if (device_.lost()) return device_.lost_status();
  // Full specialization vector in id order: defaults, then the caller's values by name.
  std::vector<uint32_t> values;
  for (const auto& sc : shader.spec_constants) values.push_back(sc.default_bits);
  for (const SpecValue& v : spec) {
    bool found = false;
    for (size_t i = 0; i < shader.spec_constants.size(); ++i) {
      if (shader.spec_constants[i].name != v.name) continue;
      if (shader.spec_constants[i].type == SpecType::kBool && v.bits > 1)
        return invalid_argument("specialization constant '" + v.name + "' of kernel " +
                                std::string(shader.kernel) + " is a bool; got " + std::to_string(v.bits));
      values[i] = v.bits;
      found = true;
    }
    if (!found)
      return invalid_argument("kernel " + std::string(shader.kernel) + " has no specialization constant '" +
                              v.name + "' (it has: " + spec_names(shader) + ")");
  }
  // Effective workgroup size against the device limits.
  std::array<uint32_t, 3> local{shader.local_size[0], shader.local_size[1], shader.local_size[2]};
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < shader.spec_constants.size(); ++i)
      if (shader.local_size_spec_id[d] >= 0 && shader.spec_constants[i].id == uint32_t(shader.local_size_spec_id[d]))
        local[d] = values[i];
  const DeviceCaps& caps = device_.info().caps;
  const uint64_t invocations = uint64_t(local[0]) * local[1] * local[2];
  for (int d = 0; d < 3; ++d) {
    if (local[d] == 0 || local[d] > caps.max_workgroup_size[d])
      return invalid_argument("kernel " + std::string(shader.kernel) + ": workgroup size " + std::to_string(local[d]) +
                              " in dimension " + std::to_string(d) + " is outside 1.." +
                              std::to_string(caps.max_workgroup_size[d]));
  }
  if (invocations > caps.max_workgroup_invocations)
    return invalid_argument("kernel " + std::string(shader.kernel) + ": workgroup of " + std::to_string(invocations) +
                            " invocations exceeds the device limit of " + std::to_string(caps.max_workgroup_invocations));

  auto key = std::make_pair(&shader, values);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) {
    ++stats_.lookups;
    return it->second.pipeline;
  }
  // What the kernel asks of the device, against its capabilities (a limit profile may lower them).
  std::vector<uint32_t> spec_ids;
  for (const auto& sc : shader.spec_constants) spec_ids.push_back(sc.id);
  Result<ShaderNeeds> needs = shader_needs(shader.spirv_words(), spec_ids, values);
  if (!needs.is_ok()) return needs.status().with_context("kernel " + std::string(shader.kernel));
  RILL_RETURN_IF_ERROR(check_shader_needs(needs.value(), device_.info(), shader.kernel));
  RILL_ASSIGN_OR_RETURN(Layout * layout, layout_for(shader));

  std::vector<VkSpecializationMapEntry> entries;
  for (size_t i = 0; i < shader.spec_constants.size(); ++i)
    entries.push_back({shader.spec_constants[i].id, static_cast<uint32_t>(i * 4), 4});
  VkSpecializationInfo spec_info{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4, values.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = layout->module.get();
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec_info;
  info.layout = layout->layout.get();
  VkPipelineCreationFeedback feedback{};
  VkPipelineCreationFeedbackCreateInfo feedback_info{VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
  feedback_info.pPipelineCreationFeedback = &feedback;
  if (caps.pipeline_creation_feedback) info.pNext = &feedback_info;
  if (capture_statistics_) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;

  const auto start = std::chrono::steady_clock::now();
  const double start_us = profiler_.enabled() ? profiler_.now_us() : 0.0;
  RILL_ASSIGN_OR_RETURN(
      UniquePipeline owned,
      create_unique<UniquePipeline>(
          device_, faults_, "vkCreateComputePipelines (" + std::string(shader.kernel) + ")", [&](auto* out) {
            return device_.fn().vkCreateComputePipelines(device_.handle(), cache_.get(), 1, &info, nullptr, out);
          }));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  static std::atomic<uint32_t> next_id{1};
  const uint32_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  std::vector<PipelineStatistic>& statistics = statistics_[id];
  if (capture_statistics_) statistics = read_statistics(device_, owned.get());
  if (profiler_.enabled()) {
    ProfileEvent e;
    e.name = "create pipeline " + std::string(shader.kernel);
    e.category = "pipeline";
    e.start_us = start_us;
    e.duration_us = profiler_.now_us() - start_us;
    e.kernel = std::string(shader.kernel);
    e.variant = shader.variant.empty() ? std::string("default") : std::string(shader.variant);
    e.pipeline = id;
    e.statistics = statistics;
    profiler_.add(std::move(e));
  }
  ++stats_.pipelines_created;
  stats_.creation_ms_total += ms;
  stats_.creation_ms_max = std::max(stats_.creation_ms_max, ms);
  if ((feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
      (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT))
    ++stats_.driver_cache_hits;
  Pipeline p;
  p.pipeline = owned.get();
  p.layout = layout->layout.get();
  p.set_layout = layout->set_layout.get();
  p.local_size = local;
  p.id = id;
  pipelines_.emplace(std::move(key), Created{std::move(owned), p});
  return p;
}

Result<std::vector<PipelineStatistic>> PipelineManager::statistics(uint32_t id) const {
  const auto found = statistics_.find(id);
  if (found == statistics_.end())
    return not_found("no pipeline " + std::to_string(id) + " in this context (it has made " +
                     std::to_string(statistics_.size()) + "; ids are unique in the process)");
  return found->second;
}

namespace {

// The driver's data of `cache`, through the device's check, so that a device lost here is latched
// like anywhere else (VK_INCOMPLETE: the cache grew between the calls; what fit is kept).
Result<std::vector<uint8_t>> cache_data(Device& device, VkPipelineCache cache) {
  const auto& fn = device.fn();
  size_t size = 0;
  if (VkResult r = fn.vkGetPipelineCacheData(device.handle(), cache, &size, nullptr); r != VK_SUCCESS)
    return device.check(r, "vkGetPipelineCacheData");
  std::vector<uint8_t> data(size);
  VkResult r = fn.vkGetPipelineCacheData(device.handle(), cache, &size, data.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return device.check(r, "vkGetPipelineCacheData");
  data.resize(size);
  return data;
}

}  // namespace

std::optional<std::vector<uint8_t>> PipelineManager::merged_with_file() const try {
  auto file = read_file(cache_path_, kMaxCacheFileBytes);
  if (!file.is_ok()) return std::nullopt;
  auto payload = decode_pipeline_cache(identity_of(device_), file.value());
  if (!payload.is_ok() || payload->empty()) return std::nullopt;
  const auto& fn = device_.fn();
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = payload->size();
  info.pInitialData = payload->data();
  // Not through the fault injector: a best-effort step of saving, whose failure keeps this cache.
  VkPipelineCache raw = VK_NULL_HANDLE;
  if (fn.vkCreatePipelineCache(device_.handle(), &info, nullptr, &raw) != VK_SUCCESS) return std::nullopt;
  const UniquePipelineCache on_disk({&device_}, raw);
  const VkPipelineCache ours = cache_.get();
  if (fn.vkMergePipelineCaches(device_.handle(), on_disk.get(), 1, &ours) != VK_SUCCESS) return std::nullopt;
  auto merged = cache_data(device_, on_disk.get());
  if (!merged.is_ok()) return std::nullopt;
  return std::move(merged).value();
} catch (const std::bad_alloc&) {  // copies of up to the cap: without the memory, this cache's own
  return std::nullopt;
}

Status PipelineManager::save() const {
  if (cache_path_.empty() || !cache_) return Status::ok();
  RILL_ASSIGN_OR_RETURN(const std::vector<uint8_t> own, cache_data(device_, cache_.get()));
  // Another context or process may have saved its pipelines to this file since this one loaded it:
  // merged with them, the last to save does not drop them. Past the cap, this cache's own alone.
  // The read, merge and replace hold the file's lock, so that two saving at once do not each merge
  // the file as it was and the second replace the first's. A holder that keeps it for seconds (a
  // stopped process) is waited for no longer: the save goes ahead as it would without the lock, as
  // it does where the lock file cannot be made (the write then says why, if it fails too).
  auto lock = platform::FileLock::acquire(cache_path_ + ".lock", std::chrono::seconds(2));
  if (lock.status().code() == StatusCode::kDeadlineExceeded)
    log_warning("pipeline cache '" + cache_path_ + "': saving without its lock file (" + lock.status().message() +
                "); a save at the same moment may drop the pipelines of one of the two");
  std::vector<uint8_t> file;
  if (auto merged = merged_with_file()) file = encode_pipeline_cache(identity_of(device_), *merged);
  if (file.size() > kMaxCacheFileBytes)
    log_warning("pipeline cache '" + cache_path_ + "': with the pipelines saved there by others it would pass " +
                std::to_string(kMaxCacheFileBytes >> 20) + " MiB; saving this context's own");
  if (file.empty() || file.size() > kMaxCacheFileBytes) file = encode_pipeline_cache(identity_of(device_), own);
  // A file the next load would refuse (past its cap) is not written: every run would compile cold,
  // warn, and write it again.
  if (file.size() > kMaxCacheFileBytes)
    return out_of_range("saving the pipeline cache: the driver's " + std::to_string(own.size()) + " bytes pass the " +
                        std::to_string(kMaxCacheFileBytes >> 20) + " MiB a cache file may hold; not written");
  return write_file_atomic(cache_path_, file).with_context("saving the pipeline cache");
}

}  // namespace rill::vk
