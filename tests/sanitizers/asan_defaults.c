/* Linked into every executable of an AddressSanitizer build (CMakeLists.txt): the runtime's
 * defaults, which ASAN_OPTIONS and LSAN_OPTIONS still override key by key, and LeakSanitizer's
 * suppressions, compiled in so that every such executable has them however it is started (ctest,
 * by hand, a libFuzzer binary of the fuzz preset).
 *
 * quarantine_size_mb=16 (default 256): lavapipe's compute shaders allocate 384 bytes at 4 KiB
 * alignment for every workgroup they run (290,727 allocations in a test of 100 fills of 1 MiB).
 * A freed chunk waits in the quarantine, so with 256 MB each of those allocations took fresh
 * pages: page faults and the shadow's poisoning were 60 % of that test's time (11.8 s; 1.9 s with
 * 16 MB). A freed chunk is still poisoned until 16 MB more has been freed after it. */
const char* __asan_default_options(void);
const char* __asan_default_options(void) { return "quarantine_size_mb=16"; }

/* Leaks reported inside third-party Vulkan components, not in rill, each named by its library:
 * Mesa's lavapipe and the LLVM JIT it uses keep process-lifetime allocations (a libFuzzer run of the
 * lm_state loader reported 288 bytes from libvulkan_lvp.so), the Khronos validation layer keeps
 * global state for the life of the process, and the Vulkan loader its scanned manifests. */
const char* __lsan_default_suppressions(void);
const char* __lsan_default_suppressions(void) {
  return "leak:libvulkan_lvp.so\n"
         "leak:libLLVM\n"
         "leak:libVkLayer_khronos_validation.so\n"
         "leak:libvulkan.so\n";
}
const char* __lsan_default_options(void);
const char* __lsan_default_options(void) { return "print_suppressions=0"; }
