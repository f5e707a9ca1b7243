// Device selection: ranking, explicit options, the RILL_DEVICE override, and clear errors.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "gpu_test.hpp"
#include "scoped_env.hpp"
#include "vk/device_select.hpp"

namespace {

rill::vk::PhysicalDevice fake(uint32_t index, const char* name, rill::DeviceType type, uint64_t memory,
                              bool usable = true) {
  rill::vk::PhysicalDevice d;
  d.info.index = index;
  d.info.name = name;
  d.info.type = type;
  d.info.caps.device_local_bytes = memory;
  d.info.usable = usable;
  if (!usable) d.info.unusable_reason = "test";
  return d;
}

// RILL_DEVICE for one scope.
struct DeviceVariable : rill_test::ScopedEnv {
  explicit DeviceVariable(const char* value) : ScopedEnv("RILL_DEVICE", value) {}
};

}  // namespace

TEST_CASE("ranking prefers discrete, then integrated, virtual, CPU; skips unusable devices", "[device]") {
  DeviceVariable env(nullptr);
  std::vector<rill::vk::PhysicalDevice> devices = {
      fake(0, "lavapipe", rill::DeviceType::kCpu, 1 << 30),
      fake(1, "igpu", rill::DeviceType::kIntegratedGpu, 1 << 30),
      fake(2, "dgpu-broken", rill::DeviceType::kDiscreteGpu, 8ull << 30, false),
      fake(3, "dgpu-small", rill::DeviceType::kDiscreteGpu, 4ull << 30),
      fake(4, "dgpu-big", rill::DeviceType::kDiscreteGpu, 16ull << 30)};
  std::string reason;
  auto chosen = rill::vk::choose_device(devices, {}, reason);
  REQUIRE(chosen.is_ok());
  CHECK(devices[size_t(chosen.value())].info.name == "dgpu-big");
  CHECK(reason.find("discrete GPU") != std::string::npos);
  devices.erase(devices.begin() + 2, devices.end());
  CHECK(rill::vk::choose_device(devices, {}, reason).value() == 1);
}

TEST_CASE("explicit index or name wins over RILL_DEVICE, which wins over ranking", "[device]") {
  std::vector<rill::vk::PhysicalDevice> devices = {fake(0, "llvmpipe (LLVM)", rill::DeviceType::kCpu, 1),
                                                   fake(1, "Mali-G78", rill::DeviceType::kIntegratedGpu, 1)};
  std::string reason;
  DeviceVariable env("llvm");
  CHECK(rill::vk::choose_device(devices, {}, reason).value() == 0);
  CHECK(reason.find("RILL_DEVICE") != std::string::npos);
  CHECK(rill::vk::choose_device(devices, {.name = "mali"}, reason).value() == 1);
  CHECK(rill::vk::choose_device(devices, {.index = 1}, reason).value() == 1);
  CHECK(rill::vk::choose_device(devices, {.use_environment = false}, reason).value() == 1);
}

TEST_CASE("asking for a device that does not exist names the devices that do", "[device]") {
  DeviceVariable env(nullptr);
  std::vector<rill::vk::PhysicalDevice> devices = {fake(0, "llvmpipe", rill::DeviceType::kCpu, 1)};
  std::string reason;
  auto by_index = rill::vk::choose_device(devices, {.index = 7}, reason);
  CHECK(by_index.status().code() == rill::StatusCode::kNotFound);
  CHECK(by_index.status().message().find("0: llvmpipe") != std::string::npos);
  auto by_name = rill::vk::choose_device(devices, {.name = "adreno"}, reason);
  CHECK(by_name.status().code() == rill::StatusCode::kNotFound);
  // Only digits are an index: " 0" and "+0" are names (strtol took them for device 0).
  for (const char* spec : {" 0", "+0", "0x0"}) {
    DeviceVariable padded(spec);
    INFO(spec);
    CHECK(rill::vk::choose_device(devices, {}, reason).status().code() == rill::StatusCode::kNotFound);
  }
  {
    DeviceVariable digits("0");
    CHECK(rill::vk::choose_device(devices, {}, reason).is_ok());
  }
  devices[0].info.usable = false;
  CHECK(rill::vk::choose_device(devices, {.index = 0}, reason).status().code() == rill::StatusCode::kUnavailable);
  CHECK(rill::vk::choose_device({}, {}, reason).status().code() == rill::StatusCode::kUnavailable);
}

GPU_TEST_CASE("a real context honours RILL_DEVICE by index and by name", "[device][gpu]") {
  auto listing = rill::list_devices();
  REQUIRE(listing.is_ok());
  REQUIRE(listing->chosen >= 0);
  const rill::DeviceInfo& first = listing->devices[0];
  {
    DeviceVariable env("0");
    auto ctx = rill_test::make_context();
    CHECK(ctx.device().index == 0);
    CHECK(ctx.selection_reason().find("RILL_DEVICE") != std::string::npos);
  }
  {
    DeviceVariable env(first.name.substr(0, 4).c_str());
    auto ctx = rill_test::make_context();
    CHECK(ctx.device().name == first.name);
    // Chosen by the name (with one device, the default choice is the same device).
    CHECK(ctx.selection_reason().find("RILL_DEVICE") != std::string::npos);
  }
  {
    DeviceVariable env("no-such-device-anywhere");
    auto ctx = rill::Context::create(rill_test::validated_options());
    CHECK(ctx.status().code() == rill::StatusCode::kNotFound);
    CHECK(ctx.status().message().find(first.name) != std::string::npos);
  }
}

GPU_TEST_CASE("device capabilities are recorded", "[device][gpu]") {
  auto ctx = rill_test::make_context();
  const rill::DeviceCaps& caps = ctx.device().caps;
  CHECK(caps.api_version >= VK_API_VERSION_1_1);
  CHECK(caps.subgroup_size >= 1);
  CHECK(caps.shared_memory_bytes >= 16384);  // Vulkan's minimum
  CHECK(caps.max_storage_buffer_range >= (1u << 27) - 1);
  CHECK(caps.max_workgroup_invocations >= 128);
  CHECK(caps.max_allocation_bytes >= (1ull << 30));
  if (ctx.device().type == rill::DeviceType::kCpu) {
    CHECK(caps.unified_memory == (ctx.device().limit_profile != "vulkan11-minimum"));  // which maps none
    CHECK(std::find(ctx.device().quirks.begin(), ctx.device().quirks.end(), "cpu-driver") != ctx.device().quirks.end());
  }
}

GPU_TEST_CASE("switch and family variables refuse values that would quietly mean off or the default", "[device][gpu]") {
  for (const auto& [name, value] : {std::pair{"RILL_VALIDATION", "enabled"}, std::pair{"RILL_PIPELINE_STATISTICS", "2"},
                                    std::pair{"RILL_KERNEL_VARIANT", "GPU"}, std::pair{"RILL_LOG", "debug"}}) {
    rill_test::ScopedEnv variable(name, value);
    const auto ctx = rill::Context::create();
    INFO(name << "=" << value << ": " << ctx.status().to_string());
    CHECK(ctx.status().code() == rill::StatusCode::kInvalidArgument);
    CHECK(ctx.status().message().find(name) != std::string::npos);
  }
  rill_test::ScopedEnv yes("RILL_PIPELINE_STATISTICS", "Yes");  // any case of yes/no, on/off, true/false
  CHECK(rill::Context::create().is_ok());
}
