// Proves the gate every GPU test relies on: with synchronization validation on, a missing
// barrier is reported. The recorder's automatic barriers are switched off for one sequence.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "access.hpp"
#include "gpu_test.hpp"
#include "scoped_env.hpp"
#include "sequence_impl.hpp"
#include "vk/instance.hpp"

TEST_CASE("synchronization validation reports a missing barrier", "[validation][gpu][gate]") {
  rill_test::clear_validation_messages();
  {
    auto ctx = rill_test::make_context();
    const uint32_t n = 4096;
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    REQUIRE(x.is_ok());
    REQUIRE(y.is_ok());
    auto seq = ctx.sequence();
    REQUIRE(seq.is_ok());
    rill::detail::Access::impl(*seq).auto_barriers = false;
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 1.0f)).is_ok());       // writes x
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 1.0f)).is_ok());  // reads x: RAW hazard
    REQUIRE(seq->run().is_ok());
  }
  if (rill_test::validation_by_loader()) {
    WARN("the loader's validation layer prints the hazard: windows_validation_gate looks for it in the output");
    return;
  }
  const auto messages = rill_test::validation_messages();
  bool hazard = false;
  for (const auto& m : messages) hazard = hazard || m.find("SYNC-HAZARD-READ-AFTER-WRITE") != std::string::npos;
  INFO("messages: " << messages.size());
  CHECK(hazard);
  rill_test::clear_validation_messages();
}

GPU_TEST_CASE("the same two dispatches with automatic barriers are clean", "[validation][gpu]") {
  auto ctx = rill_test::make_context();
  const uint32_t n = 4096;
  auto x = ctx.tensor(rill::DType::kF32, {n});
  auto y = ctx.tensor(rill::DType::kF32, {n});
  auto seq = ctx.sequence();
  REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 1.0f)).is_ok());
  REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 1.0f)).is_ok());
  REQUIRE(seq->run(3).is_ok());
}

// A machine with another architecture's Mesa installed lists ICD manifests whose libraries the
// loader cannot open; the loader says so through the debug messenger. That is the machine, not a
// misuse of Vulkan, and must not fail the gate (it failed 10 of 15 tests on such a machine).
GPU_TEST_CASE("the loader's notices about drivers it cannot load are not validation errors", "[validation][gpu]") {
  if (rill_test::validation_by_loader()) {  // under Wine: the Linux loader never sees this process's variable
    WARN("left out: the loader inserting the validation layer is not this process's (Wine)");
    return;
  }
  const std::string manifest = rill_test::temp_path("missing_driver_icd.json");
  {
    std::ofstream out(manifest);
    out << R"({"file_format_version": "1.0.0", "ICD": {"library_path": "/nonexistent/libvulkan_missing.so", "api_version": "1.1.0"}})";
  }
  rill_test::ScopedEnv add_driver("VK_ADD_DRIVER_FILES", manifest);
  auto ctx = rill_test::make_context();
  auto x = ctx.tensor(rill::DType::kF32, {64});
  REQUIRE(x.is_ok());
  auto seq = ctx.sequence();
  REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, 64, 1.0f)).is_ok());
  REQUIRE(seq->run().is_ok());
  std::remove(manifest.c_str());
}

TEST_CASE("loader notices are told apart from validation messages", "[validation]") {
  CHECK(rill::vk::is_loader_notice(VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, "Loader Message"));
  CHECK_FALSE(rill::vk::is_loader_notice(VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, "Loader Message"));
  CHECK_FALSE(rill::vk::is_loader_notice(VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, "UNASSIGNED-General"));
  CHECK_FALSE(rill::vk::is_loader_notice(VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, nullptr));
  CHECK_FALSE(rill::vk::is_loader_notice(
      VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, "Loader Message"));
}
