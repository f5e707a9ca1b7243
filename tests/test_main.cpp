// Catch2 main for rill's tests.
#define CATCH_CONFIG_RUNNER
// No Catch signal handlers: reporting a crash, they allocate, and a crash inside malloc (glibc's heap
// check aborting with the arena locked) then hung the process until CTest's timeout, 15 minutes in
// a limit-profile run, instead of failing at once. The suites run in one process print each case's
// duration (-d yes), so the case after the last one printed is the one that crashed.
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#ifndef _WIN32
#include <dlfcn.h>
#endif

namespace {

// The Vulkan loader unloads the validation layer and the driver when an instance is destroyed.
// LeakSanitizer then cannot name the library that leaked (the layer 1.3.239 leaks a little per
// freed command buffer), and the suppressions (tests/sanitizers/asan_defaults.c) cannot name it. Pinning the
// libraries keeps them mapped; it changes nothing else.
#ifndef _WIN32
struct PinVulkanLibraries {
  PinVulkanLibraries() {
    for (const char* lib : {"libVkLayer_khronos_validation.so", "libvulkan_lvp.so"})
      dlopen(lib, RTLD_LAZY | RTLD_NODELETE);
  }
} pin_vulkan_libraries;
#endif

}  // namespace

namespace rill_test {
bool limit_profile_changes_nothing(std::string& why);  // gpu_test.hpp
}

int main(int argc, char* argv[]) {
  // A limit-profile run on a device whose limits are already within the profile would repeat the
  // suite's own run (on lavapipe "adreno" took 2-3 minutes of CI for nothing): CTest counts it
  // skipped, with the reason (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt).
  if (std::string why; rill_test::limit_profile_changes_nothing(why)) {
    std::printf("skipped: %s\n", why.c_str());
    return 0;
  }
  return Catch::Session().run(argc, argv);
}
