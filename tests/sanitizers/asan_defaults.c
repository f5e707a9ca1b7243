/* Linked into every executable of an AddressSanitizer build (CMakeLists.txt): the runtime's
 * defaults, which ASAN_OPTIONS still overrides key by key.
 *
 * quarantine_size_mb=16 (default 256): lavapipe's compute shaders allocate 384 bytes at 4 KiB
 * alignment for every workgroup they run (290,727 allocations in a test of 100 fills of 1 MiB).
 * A freed chunk waits in the quarantine, so with 256 MB each of those allocations took fresh
 * pages: page faults and the shadow's poisoning were 60 % of that test's time (11.8 s; 1.9 s with
 * 16 MB). A freed chunk is still poisoned until 16 MB more has been freed after it. */
const char* __asan_default_options(void);
const char* __asan_default_options(void) { return "quarantine_size_mb=16"; }
