// Context: one device, its memory pools, its pipelines and its queue. Everything starts here.
//
// A Context and the objects made from it (tensors, sequences) are not thread-safe: use one
// context per thread, or serialise calls. Tensors and sequences keep the context's device alive,
// so they may outlive the Context object itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/device.hpp"
#include "rill/export.hpp"
#include "rill/log.hpp"
#include "rill/profile.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"
#include "rill/types.hpp"

// Vulkan handles without including Vulkan headers (the typedefs are compatible with vulkan_core.h).
struct VkInstance_T;
struct VkPhysicalDevice_T;
struct VkDevice_T;
struct VkQueue_T;

namespace rill {

namespace detail {
class ContextImpl;
struct Access;  // the engine's own access to the implementation (engine/src/access.hpp)
}

// A device the application already owns. rill records into its queue and never destroys it.
// The device must have been created with the features rill reports as needed (none beyond
// Vulkan 1.1 core for the foundation kernels; f16 kernels need storageBuffer16BitAccess). rill
// cannot tell which other features the application enabled, so it uses none on it: no cooperative
// matrices, f16 or int8 arithmetic, 8-bit storage or subgroup size control (kernels fall back).
struct ExternalVulkan {
  VkInstance_T* instance = nullptr;
  VkPhysicalDevice_T* physical_device = nullptr;
  VkDevice_T* device = nullptr;
  VkQueue_T* queue = nullptr;  // must support compute
  uint32_t queue_family_index = 0;
  uint32_t api_version = 0;  // the apiVersion the instance was created with (0: 1.1; 1.0 is refused)
};

struct ContextOptions {
  DeviceSelector device;
  // Khronos validation layer; also switched on by RILL_VALIDATION=1.
  bool validation = false;
  bool synchronization_validation = true;  // only with validation
  // Receives validation-layer messages (warnings and errors). Default: rill's log. It runs inside
  // rill's calls (context creation holds a process-wide lock then): it must not create a context or
  // list devices.
  std::function<void(MessageSeverity, std::string_view)> on_validation_message;
  // Where to persist the VkPipelineCache. Empty: in memory only. Loaded at creation (a bad or
  // foreign file is ignored with a warning), written atomically by save_pipeline_cache() and
  // when the context is destroyed, merged with what others saved there since; saves from any
  // context or process take turns on the lock file `pipeline_cache_path + ".lock"`, left beside it.
  std::string pipeline_cache_path;
  // Kernel variant to prefer over the per-device choice ("gpu", "cpu"); also RILL_KERNEL_VARIANT.
  std::string kernel_variant;
  // Forced kernel-plan choices, for tests and for working around a driver problem; also
  // RILL_KERNEL_PLAN. Comma-separated key=value ("linear_attention=parallel,la_tile=8"); every key
  // with its values is in kernel_plan_keys() (device.hpp; `rill info --plan-keys`). Unknown keys
  // or values make Context::create fail with InvalidArgument.
  std::string kernel_plan;
  // A tuning file written by `rill tune` on this device (rill/tuning.hpp); also RILL_TUNING. Its
  // choices are taken where they fit, under the forced ones. A missing, malformed or foreign file
  // (another device, driver, limit profile or kernel family) is ignored with a warning.
  std::string tuning_path;
  // Run within a limit profile ("mali", "adreno", "vulkan11-minimum"; see device.hpp); also
  // RILL_LIMIT_PROFILE. Empty: the device's own limits. An unknown name fails Context::create.
  std::string limit_profile;
  // Size of each memory block that tensors are sub-allocated from (clamped to device limits).
  uint64_t memory_block_bytes = 64ull << 20;
  // The most device memory this context may hold, in bytes (its memory blocks together; not the
  // host memory that stages uploads and downloads on a discrete GPU, so a full budget's tensors can
  // still be written and read): past it an allocation fails with ResourceExhausted, naming the
  // budget, and nothing else changes. An allocation that finds it spent while tensors dropped under
  // running work still hold memory first waits for that work. 0: no budget but the device's. Also
  // RILL_DEVICE_MEMORY_BUDGET (bytes, or with a K, M or G suffix: 512M). With a budget, shared blocks are at most an
  // eighth of it.
  uint64_t device_memory_budget = 0;
  // Use an application-owned device instead of creating one.
  const ExternalVulkan* external = nullptr;
  // Profile into this Chrome trace file (see profile.hpp); also RILL_PROFILE. Empty: off.
  std::string profile_path;
  // Keep the driver's compiler statistics of every pipeline (registers, spills, shared memory, as
  // the driver reports them; Context::pipeline_statistics and the profile's summary), where the
  // device reports any (DeviceCaps::pipeline_statistics). Also RILL_PIPELINE_STATISTICS=1. Off by
  // default: some drivers bypass their pipeline caches for pipelines that capture them.
  bool pipeline_statistics = false;
  // The longest one call may wait for the GPU, in milliseconds; past it the call returns
  // DeadlineExceeded, the work keeps running and the context is given up as after a device loss
  // (every later call that needs the GPU returns DeadlineExceeded). It also bounds the wait when
  // the context is destroyed: what the unfinished work uses is then leaked, never freed under it.
  // For a device that may hang (a GPU without a driver watchdog, a shader caught in a loop), so
  // that the application can recover with a new context. 0: no limit. Also RILL_GPU_WAIT_TIMEOUT
  // ("500ms", "30s").
  uint32_t gpu_wait_timeout_ms = 0;
};

class RILL_API Context {
 public:
  static Result<Context> create(const ContextOptions& options = {});

  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const DeviceInfo& device() const;
  const std::string& selection_reason() const;

  // A tensor of `shape` (every dimension >= 1). Contents are undefined until written.
  Result<Tensor> tensor(DType dtype, std::vector<int64_t> shape, std::string name = {},
                        MemoryPool pool = MemoryPool::kActivations);

  // Synchronous copies between host and tensor. They wait for submitted work that uses the
  // tensor. `bytes` must be exactly tensor.size_bytes().
  Status upload(const Tensor& tensor, std::span<const uint8_t> bytes);
  Status download(const Tensor& tensor, std::span<uint8_t> bytes);
  // Float convenience: converts to and from f16 for f16 tensors; needs an f32 or f16 tensor.
  Status upload_floats(const Tensor& tensor, std::span<const float> values);
  Result<std::vector<float>> download_floats(const Tensor& tensor);

  // A recorder of dispatches and copies; see sequence.hpp.
  Result<Sequence> sequence(const SequenceOptions& options = {});

  // Names of the kernels embedded in this build, and the variant this device would get.
  std::vector<std::string> kernel_names() const;
  Result<std::string> kernel_variant(std::string_view kernel) const;

  Status save_pipeline_cache();
  // Profiling (profile.hpp): whether it is on, the events so far, and writing the trace and its
  // summary now (it is also written when the context is destroyed).
  bool profiling() const;
  std::vector<ProfileEvent> profile_events() const;
  Status write_profile();
  Status wait_idle();
  bool device_lost() const;
  // OK while the context can run work; else what ended it, which every later call that needs the
  // GPU returns too: DeviceLost (a GPU reset) or DeadlineExceeded (a wait past
  // gpu_wait_timeout_ms). Then create a new context (and models), and restore saved state there.
  Status usable() const;

  MemoryStats memory_stats() const;
  // Starts peak_used_bytes over from the bytes in use now (to measure the peak of one task).
  void reset_peak_memory();
  PipelineStats pipeline_stats() const;
  // The compiler statistics of pipeline `pipeline` (the id in DispatchTiming and ProfileEvent),
  // every executable's; empty where they are not captured (ContextOptions::pipeline_statistics) or the
  // driver reports none. NotFound for an id this context never gave.
  Result<std::vector<PipelineStatistic>> pipeline_statistics(uint32_t pipeline) const;
  // The kernel family this context's plans take: "cpu" (register kernels, CPU drivers) or "gpu"
  // (the device's preference, or ContextOptions::kernel_variant / RILL_KERNEL_VARIANT).
  std::string kernel_family() const;
  // The tuning file's kernel plan this context plans with ("key=value,..."); empty without one.
  const std::string& tuned_plan() const;
  // The forced kernel-plan choices (ContextOptions::kernel_plan or RILL_KERNEL_PLAN), and replacing
  // them: what is recorded afterwards plans with the new ones, while sequences (and language-model
  // sessions) made before keep theirs. So one context, with the same tensors, can time two plans
  // side by side. InvalidArgument for an unknown key or value, leaving the plan as it was. Not
  // while another thread records on this context.
  const std::string& kernel_plan() const;
  Status set_kernel_plan(std::string plan);

 private:
  friend struct detail::Access;
  explicit Context(std::shared_ptr<detail::ContextImpl> impl);
  std::shared_ptr<detail::ContextImpl> impl_;
};

}  // namespace rill
