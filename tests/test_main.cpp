// Catch2 main for rill's tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#ifndef _WIN32
#include <dlfcn.h>
#endif

namespace {

// The Vulkan loader unloads the validation layer and the driver when an instance is destroyed.
// LeakSanitizer then cannot name the library that leaked (the layer 1.3.239 leaks a little per
// freed command buffer), and tests/sanitizers/lsan.supp cannot suppress it by name. Pinning the
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
