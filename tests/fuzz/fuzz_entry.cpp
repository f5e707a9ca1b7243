// libFuzzer entry point for one target of loaders.hpp (RILL_FUZZ_TARGET: its index), built with
// clang's -fsanitize=fuzzer when RILL_FUZZ_LIBFUZZER is on.
#include "loaders.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill_fuzz::targets()[RILL_FUZZ_TARGET].run(data, size);
  return 0;
}
