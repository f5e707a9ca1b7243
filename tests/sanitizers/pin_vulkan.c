/* Linked into every executable of a sanitizer build (CMakeLists.txt). The Vulkan loader unloads the
 * driver and the validation layer when an instance is destroyed; memory those libraries still hold
 * then looks leaked (its only pointers were in their unmapped globals), and LeakSanitizer cannot
 * name the library, so the suppressions (asan_defaults.c) cannot name it: seen as 128 bytes "leaked"
 * from "<unknown module>" by every process that creates an instance. Keeping the libraries mapped
 * until exit changes nothing else. rill_tests does the same in test_main.cpp. */
#include <dlfcn.h>

__attribute__((constructor)) static void rill_pin_vulkan_libraries(void) {
  static const char* const libraries[] = {"libvulkan.so.1", "libvulkan_lvp.so", "libVkLayer_khronos_validation.so"};
  for (unsigned i = 0; i < sizeof libraries / sizeof libraries[0]; ++i) dlopen(libraries[i], RTLD_LAZY | RTLD_NODELETE);
}
