#include "gpu_test.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "vk/kernel_contracts.hpp"
#include "vk/shader_registry.hpp"

namespace rill_test {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_messages;

// Whether the suite's CMake definition set `name` to 1 for this run.
bool set_by_suite(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace

std::vector<std::string> validation_messages() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_messages;
}

void clear_validation_messages() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_messages.clear();
}

rill::ContextOptions validated_options() {
  rill::ContextOptions o;
  o.validation = !validation_by_loader();
  o.synchronization_validation = o.validation;
  o.on_validation_message = [](rill::MessageSeverity, std::string_view text) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_messages.emplace_back(text);
  };
  return o;
}

bool emulated() { return set_by_suite("RILL_TEST_EMULATED"); }

bool validation_by_loader() { return set_by_suite("RILL_TEST_VALIDATION_BY_LOADER"); }

std::vector<rill::DType> float_dtypes(const rill::Context& ctx) {
  if (ctx.device().caps.storage_buffer_16bit) return {rill::DType::kF32, rill::DType::kF16};
  WARN("f16 cases skipped: " << ctx.device().name << " has no usable 16-bit storage");
  return {rill::DType::kF32};
}

rill::Context make_context(rill::ContextOptions options) {
  auto ctx = rill::Context::create(options);
  INFO(ctx.status().to_string());
  REQUIRE(ctx.is_ok());
  return std::move(ctx).value();
}

// Workgroups of 128 invocations, the most every Vulkan device (and limit profile) allows.
constexpr uint32_t kHelperWorkgroup = 128;

bool limit_profile_changes_nothing(std::string& why) {
  const char* name = std::getenv("RILL_LIMIT_PROFILE");
  if (name == nullptr || *name == '\0') return false;
  auto listing = rill::list_devices();
  if (!listing.is_ok() || listing->chosen < 0) return false;
  const rill::DeviceInfo& device = listing->devices[size_t(listing->chosen)];
  rill::DeviceInfo profiled = device;
  if (!rill::apply_limit_profile(name, profiled).is_ok()) return false;
  // A workgroup dimension is compared only up to the largest size an embedded kernel can declare in
  // it (any, where a specialization constant sets it): "adreno"'s depth of 64 against lavapipe's 1024
  // is no difference when every kernel's depth is 1.
  rill::DeviceCaps own = device.caps, lowered = profiled.caps;
  for (int d = 0; d < 3; ++d) {
    uint32_t reachable = 1;
    for (const rill::vk::ShaderInfo& shader : rill::vk::shader_registry())
      reachable = shader.local_size_spec_id[d] >= 0 ? UINT32_MAX : std::max(reachable, shader.local_size[d]);
    own.max_workgroup_size[d] = std::min(own.max_workgroup_size[d], reachable);
    lowered.max_workgroup_size[d] = std::min(lowered.max_workgroup_size[d], reachable);
  }
  if (!(own == lowered)) return false;
  why = "limit profile '" + std::string(name) + "' leaves the limits of " + device.name +
        " as they are: a run under it would repeat the suite's own run";
  return true;
}

rill::Dispatch fill_dispatch(const rill::Tensor& out, uint32_t n, float value) {
  return {.kernel = "util/fill",
          .bindings = {&out},
          .push = rill::push_bytes(rill::gpu::FillPush{n, value}),
          .groups = {(n + kHelperWorkgroup - 1) / kHelperWorkgroup, 1, 1},
          .spec = {rill::spec_uint("WG_SIZE", kHelperWorkgroup)}};
}

rill::Dispatch saxpy_dispatch(const rill::Tensor& x, const rill::Tensor& y, uint32_t n, float a,
                              std::string_view variant) {
  // Enough groups for either variant (default: 128 per group; cpu: 128 x 16 per group).
  return {.kernel = "util/saxpy",
          .bindings = {&x, &y},
          .push = rill::push_bytes(rill::gpu::SaxpyPush{n, a}),
          .groups = {(n + kHelperWorkgroup - 1) / kHelperWorkgroup, 1, 1},
          .spec = {rill::spec_uint("WG_SIZE", kHelperWorkgroup)},
          .variant = variant};
}

}  // namespace rill_test
