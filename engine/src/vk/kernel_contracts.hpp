// The C++ side of the contracts between the engine and its kernels: the files in
// shaders/include/contract/ compiled as C++ (see contract/prelude.glsl), so each push-constant
// struct, mode number and buffer word is defined once for both languages. The generated kernel
// registry checks every push struct's layout against the SPIR-V, member by member, at build time.
#pragma once

#include <cstdint>
#include <string_view>

namespace rill::gpu {

using uint = std::uint32_t;

// Names a push struct for Dispatch::push (push_bytes finds it by argument-dependent lookup), so
// a dispatch can check that it pushes the struct the kernel declares.
#define RILL_PUSH_STRUCT(Name)                                              \
  struct Name;                                                              \
  constexpr std::string_view push_block_name(const Name*) { return #Name; } \
  struct Name

#include "contract/attention.glsl"
#include "contract/icl.glsl"
#include "contract/lm.glsl"
#include "contract/matmul.glsl"
#include "contract/norm.glsl"
#include "contract/util.glsl"

#undef RILL_PUSH_STRUCT

}  // namespace rill::gpu
