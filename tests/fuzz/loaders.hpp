// Fuzz targets: every loader of untrusted files, each as a libFuzzer-style entry point
// (bytes in, nothing out; a crash, a sanitizer report or a hang is the failure), with a valid seed
// input per loader. Built as libFuzzer binaries with clang (-DRILL_FUZZ_LIBFUZZER=ON) and as one
// standalone driver that mutates the seeds for a bounded time (fuzz_driver.cpp, run by CTest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rill_fuzz {

struct Target {
  const char* name;
  void (*run)(const uint8_t* data, size_t size);
  std::vector<uint8_t> (*seed)();
  // Optional: makes a mutated input consistent where a format would otherwise refuse nearly every
  // mutation at its first check (a safetensors length prefix), so mutations reach deeper code.
  void (*fixup)(std::vector<uint8_t>& input) = nullptr;
};

const std::vector<Target>& targets();

}  // namespace rill_fuzz
