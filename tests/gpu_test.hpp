// Test harness for GPU tests: contexts with the Khronos validation layer (synchronization
// validation on) whose messages are captured, and GPU_TEST_CASE, which fails a test on any
// validation message, including those printed while its contexts are destroyed.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "rill/rill.hpp"
#include "temp_path.hpp"

namespace rill_test {

// Messages from the validation layer since the last clear.
std::vector<std::string> validation_messages();
void clear_validation_messages();

// Validation and synchronization validation, messages collected for the gate (GPU_TEST_CASE); under
// validation_by_loader() the loader's layer validates and the contexts ask for nothing.
rill::ContextOptions validated_options();
// A context with validation; REQUIREs that creation succeeds.
rill::Context make_context(rill::ContextOptions options = validated_options());

// Dispatch helpers for the util kernels, sized for their default workgroups.
rill::Dispatch fill_dispatch(const rill::Tensor& out, uint32_t n, float value);
rill::Dispatch saxpy_dispatch(const rill::Tensor& x, const rill::Tensor& y, uint32_t n, float a,
                              std::string_view variant = {});

// f32, and f16 where the device can store it (not under the vulkan11-minimum profile, nor on
// arm64 lavapipe: vk/quirks.cpp). Each skip is reported as a warning in the test's output; that
// f16 work is refused cleanly there is tested in test_limit_profiles.cpp.
std::vector<rill::DType> float_dtypes(const rill::Context& ctx);

// True in the arm64 suite under qemu-user (RILL_TEST_EMULATED=1, tests/CMakeLists.txt), where a
// lavapipe pipeline compiles 10-60x slower than natively: a case whose widest shape compiles a
// pipeline of its own for minutes there leaves that shape out, and says so (WARN). The sanitizer
// build sets it too: it looks for host memory errors, which extra shapes of a kernel do not add.
bool emulated();

// True in the Windows suite under Wine (RILL_TEST_VALIDATION_BY_LOADER=1, tests/CMakeLists.txt):
// winevulkan lists no layers, so a context cannot ask for validation there; the Vulkan loader on the
// Linux side inserts the validation layer instead (VK_LOADER_LAYERS_ENABLE), which prints its
// messages, and the test's output is failed on them.
bool validation_by_loader();

// Under RILL_LIMIT_PROFILE (the limit_profile_* runs, tests/CMakeLists.txt): whether the profile
// leaves the capabilities of the device the suite picks as they are, its own limits being within the
// profile's (lavapipe's within "adreno"; a workgroup dimension counts only up to what a kernel can
// declare in it). A run under it would then choose every kernel as the suite's own run did and
// repeat it; `why` says so. False without a profile, or where it changes anything or cannot be
// applied (the cases then report the error).
bool limit_profile_changes_nothing(std::string& why);

}  // namespace rill_test

#define RILL_TEST_CONCAT_INNER(a, b) a##b
#define RILL_TEST_CONCAT(a, b) RILL_TEST_CONCAT_INNER(a, b)
#define GPU_TEST_CASE_IMPL(fn, name, tags)                                      \
  static void fn();                                                             \
  TEST_CASE(name, tags) {                                                       \
    rill_test::clear_validation_messages();                                     \
    fn();                                                                       \
    const auto messages = rill_test::validation_messages();                     \
    for (const auto& m : messages) UNSCOPED_INFO(m);                            \
    CHECK(messages.empty());                                                    \
  }                                                                             \
  static void fn()
// __COUNTER__, not __LINE__: cases of two files on the same line may share a unity-build unit.
#define GPU_TEST_CASE(name, tags) GPU_TEST_CASE_IMPL(RILL_TEST_CONCAT(gpu_test_body_, __COUNTER__), name, tags)
