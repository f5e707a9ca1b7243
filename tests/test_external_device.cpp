// An application that owns its Vulkan device hands it to rill; rill runs on it and leaves it alive.
#include <cmath>
#include <vector>

#include "gpu_test.hpp"
#include "rill/ops/matmul.hpp"
#include "rill/ops/rmsnorm.hpp"
#include "vk/instance.hpp"

namespace {

// A device as an application makes one: the first device's first compute queue, no optional
// feature or extension. Needs volk's instance functions loaded for `instance`.
struct AppDevice {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VolkDeviceTable table{};
  uint32_t family = 0, families = 0;
  VkQueue queue = VK_NULL_HANDLE;
};

AppDevice make_app_device(VkInstance instance) {
  AppDevice a;
  uint32_t count = 1;
  const VkResult r = vkEnumeratePhysicalDevices(instance, &count, &a.physical);
  REQUIRE((r == VK_SUCCESS || r == VK_INCOMPLETE));
  REQUIRE(count >= 1);
  vkGetPhysicalDeviceQueueFamilyProperties(a.physical, &a.families, nullptr);
  std::vector<VkQueueFamilyProperties> props(a.families);
  vkGetPhysicalDeviceQueueFamilyProperties(a.physical, &a.families, props.data());
  while (a.family < a.families && !(props[a.family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++a.family;
  REQUIRE(a.family < a.families);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = a.family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  REQUIRE(vkCreateDevice(a.physical, &di, nullptr, &a.device) == VK_SUCCESS);
  volkLoadDeviceTable(&a.table, a.device);
  a.table.vkGetDeviceQueue(a.device, a.family, 0, &a.queue);
  return a;
}

}  // namespace

GPU_TEST_CASE("rill runs on an application-owned device and does not destroy it", "[external][gpu]") {
  // A context of rill's own, with debug labels (validation), made before the application loads its
  // instance (without debug utils) into volk: its labels must not go through volk's pointers.
  auto own = rill_test::make_context(rill_test::validated_options());
  REQUIRE(rill::vk::load_vulkan().is_ok());
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  REQUIRE(vkCreateInstance(&ii, nullptr, &instance) == VK_SUCCESS);
  volkLoadInstanceOnly(instance);
  const AppDevice app_device = make_app_device(instance);
  const VkPhysicalDevice physical = app_device.physical;
  const VkDevice device = app_device.device;
  const VolkDeviceTable& table = app_device.table;
  const uint32_t family = app_device.family, families = app_device.families;
  const VkQueue queue = app_device.queue;

  {
    rill::ExternalVulkan ext{instance, physical, device, queue, family, VK_API_VERSION_1_1};
    rill::ContextOptions options;
    options.external = &ext;
    auto ctx = rill_test::make_context(options);
    CHECK(ctx.selection_reason() == "the application supplied the device");
    // Created with no optional feature or extension: rill assumes none (their SPIR-V would be
    // undefined on this device).
    const rill::DeviceCaps& caps = ctx.device().caps;
    CHECK(caps.api_version < VK_API_VERSION_1_2);  // the application's instance
    CHECK_FALSE(caps.float16_arithmetic);
    CHECK_FALSE(caps.int8_arithmetic);
    CHECK_FALSE(caps.storage_buffer_8bit);
    CHECK_FALSE(caps.subgroup_size_control);
    CHECK_FALSE(caps.rounding_rte_f32);
    CHECK_FALSE(caps.pipeline_creation_feedback);
    const uint32_t n = 513;
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    REQUIRE(ctx.upload_floats(*x, std::vector<float>(n, 2.0f)).is_ok());
    REQUIRE(ctx.upload_floats(*y, std::vector<float>(n, 1.0f)).is_ok());
    auto seq = ctx.sequence();
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 4.0f)).is_ok());
    REQUIRE(seq->run().is_ok());
    CHECK(ctx.download_floats(*y).value()[n - 1] == 9.0f);
    auto own_x = own.tensor(rill::DType::kF32, {n});
    auto own_y = own.tensor(rill::DType::kF32, {n});
    auto own_seq = own.sequence({.label = "after the application's instance"});
    REQUIRE(own_seq->dispatch(rill_test::fill_dispatch(*own_x, n, 1.0f)).is_ok());
    REQUIRE(own_seq->dispatch(rill_test::fill_dispatch(*own_y, n, 3.0f)).is_ok());
    REQUIRE(own_seq->dispatch(rill_test::saxpy_dispatch(*own_x, *own_y, n, 2.0f)).is_ok());
    auto own_id = own_seq->download(*own_y);
    REQUIRE(own_seq->run().is_ok());
    CHECK(own_seq->read_floats(*own_id).value()[n - 1] == 5.0f);
  }
  {
    // A queue family the device lacks is refused by name.
    rill::ExternalVulkan ext{instance, physical, device, queue, families, VK_API_VERSION_1_1};
    rill::ContextOptions options;
    options.external = &ext;
    const auto refused = rill::Context::create(options);
    CHECK(refused.status().code() == rill::StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find("does not exist") != std::string::npos);
  }
  {
    // An instance made for Vulkan 1.0 is refused, by the reason rill would not choose the device.
    rill::ExternalVulkan ext{instance, physical, device, queue, family, VK_API_VERSION_1_0};
    rill::ContextOptions options;
    options.external = &ext;
    const auto refused = rill::Context::create(options);
    CHECK(refused.status().code() == rill::StatusCode::kUnavailable);
    CHECK(refused.status().message().find("supports only Vulkan 1.0") != std::string::npos);
  }
  // The device is still the application's: using it works.
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 256;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  CHECK(table.vkCreateBuffer(device, &bi, nullptr, &buffer) == VK_SUCCESS);
  table.vkDestroyBuffer(device, buffer, nullptr);
  table.vkDestroyDevice(device, nullptr);
  vkDestroyInstance(instance, nullptr);

  rill::ExternalVulkan incomplete{};
  rill::ContextOptions bad;
  bad.external = &incomplete;
  CHECK(rill::Context::create(bad).status().code() == rill::StatusCode::kInvalidArgument);
}

// The same path under the validation layer and synchronization validation: an application's device
// made with no optional feature, rill's kernels on it. rill's own validated instance stands in for
// the application's (its messages are the test's); the device is made here, as an application would.
GPU_TEST_CASE("rill on an application-owned device draws no validation message", "[external][gpu]") {
  rill::vk::InstanceConfig config;
  config.validation = true;
  config.on_message = rill_test::validated_options().on_validation_message;
  auto instance = rill::vk::Instance::create(config);
  REQUIRE(instance.is_ok());
  const VkInstance handle = (*instance)->handle();
  AppDevice app_device;
  {
    const rill::vk::InstanceFunctionsLock functions(handle);
    app_device = make_app_device(handle);
  }
  const VkPhysicalDevice physical = app_device.physical;
  const VkDevice device = app_device.device;
  const VolkDeviceTable& table = app_device.table;
  const uint32_t family = app_device.family;
  const VkQueue queue = app_device.queue;
  {
    rill::ExternalVulkan ext{handle, physical, device, queue, family, (*instance)->api_version()};
    rill::ContextOptions options;
    options.external = &ext;
    auto ctx = rill_test::make_context(options);
    // Work of several kernels and the transfers: an RMSNorm, a matmul and a copy back.
    const uint32_t rows = 33, cols = 70;
    auto x = ctx.tensor(rill::DType::kF32, {rows, cols}).value();
    auto gain = ctx.tensor(rill::DType::kF32, {cols}).value();
    auto y = ctx.tensor(rill::DType::kF32, {rows, cols}).value();
    auto w = ctx.tensor(rill::DType::kF32, {cols, 17}).value();
    auto out = ctx.tensor(rill::DType::kF32, {rows, 17}).value();
    std::vector<float> xs(rows * cols), ws(cols * 17);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 13) - 6) / 4.0f;
    for (size_t i = 0; i < ws.size(); ++i) ws[i] = float(int(i % 7) - 3) / 8.0f;
    REQUIRE(ctx.upload_floats(x, xs).is_ok());
    REQUIRE(ctx.upload_floats(gain, std::vector<float>(cols, 1.0f)).is_ok());
    REQUIRE(ctx.upload_floats(w, ws).is_ok());
    auto rstd = ctx.tensor(rill::DType::kF32, {rows}).value();
    auto seq = ctx.sequence().value();
    REQUIRE(rill::ops::rmsnorm_forward(seq, x, &gain, y, rstd, 1e-5f).is_ok());
    REQUIRE(rill::ops::matmul(seq, y, w, out).is_ok());
    REQUIRE(seq.run().is_ok());
    const auto got = ctx.download_floats(out).value();
    for (uint32_t r = 0; r < rows; ++r) {  // plain loops, in double
      double squares = 0.0;
      for (uint32_t c = 0; c < cols; ++c) squares += double(xs[r * cols + c]) * xs[r * cols + c];
      const double scale = 1.0 / std::sqrt(squares / cols + 1e-5);
      for (uint32_t n = 0; n < 17; ++n) {
        double sum = 0.0;
        for (uint32_t c = 0; c < cols; ++c) sum += xs[r * cols + c] * scale * ws[c * 17 + n];
        INFO("row " << r << " column " << n);
        CHECK(std::abs(got[r * 17 + n] - sum) <= 1e-4 * (1.0 + std::abs(sum)));
      }
    }
  }
  table.vkDestroyDevice(device, nullptr);
}
