// The contract files in this folder hold what the kernels and the engine must agree on: the
// push-constant structs, and the numbers of modes, feature maps and buffer words. Each is compiled
// twice: as GLSL by the kernels and as C++ by the engine (engine/src/vk/kernel_contracts.hpp
// includes them inside namespace rill::gpu, where uint is std::uint32_t). So they keep to what
// both languages share: structs of 32-bit scalars (and arrays of them, whose std430 layout is the
// C++ layout), `const uint` constants with a u suffix, and no functions.
//
// A kernel declares its push constants as one member named p of a contract struct:
//   layout(push_constant) uniform PushBlock { LaChunkPush p; };
// tools/spirv_embed refuses any other form, records the struct's name in the registry (the
// engine checks it against the struct a dispatch pushes) and writes a static_assert per member
// that the C++ offsets are the SPIR-V offsets.
#ifndef RILL_CONTRACT_PRELUDE_GLSL
#define RILL_CONTRACT_PRELUDE_GLSL

// A struct pushed as a kernel's push constants. The C++ side defines this macro to also name the
// struct for the dispatch check.
#ifndef RILL_PUSH_STRUCT
#define RILL_PUSH_STRUCT(Name) struct Name
#endif

#endif  // RILL_CONTRACT_PRELUDE_GLSL
