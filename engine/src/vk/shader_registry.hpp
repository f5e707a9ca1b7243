// The kernel registry: every shader in shaders/ compiled to SPIR-V at build time, with the
// interface read from the SPIR-V itself by tools/spirv_embed (never typed by hand).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace rill::vk {

enum class BindingAccess : uint8_t { kReadWrite, kReadOnly, kWriteOnly };
// kUniformTexelBuffer: a `uniform samplerBuffer` the engine fills with a view of the bound tensor
// as texels of 4 elements (vk/texel_views.hpp).
enum class DescriptorKind : uint8_t { kStorageBuffer, kUniformBuffer, kUniformTexelBuffer };
enum class SpecType : uint8_t { kBool, kInt32, kUint32, kFloat32 };

struct BindingInfo {
  uint32_t set;
  uint32_t binding;
  DescriptorKind kind;
  BindingAccess access;
  std::string_view name;  // the block's instance name in GLSL
  bool uint_texels = false;  // kUniformTexelBuffer: a usamplerBuffer (u32 tensors), else floats
};

struct SpecConstantInfo {
  uint32_t id;
  SpecType type;
  uint32_t default_bits;
  std::string_view name;
};

struct ShaderInfo {
  std::string_view kernel;   // "util/fill"
  std::string_view variant;  // "" (default), "gpu" or "cpu"
  // The SPIR-V as bytes, 4-byte aligned: embedded as a string literal, which compilers read far
  // faster than an array of a million integers. C++ code reads the words through spirv_words().
  std::span<const unsigned char> spirv;
  std::span<const BindingInfo> bindings;  // sorted by binding
  uint32_t push_constant_bytes;
  std::string_view push_block;  // the contract struct of its push constants ("" without)
  std::span<const SpecConstantInfo> spec_constants;
  uint32_t local_size[3];        // as compiled (defaults)
  int32_t local_size_spec_id[3]; // spec id that sets each dimension, -1 if fixed

  std::vector<uint32_t> spirv_words() const {
    std::vector<uint32_t> words(spirv.size() / 4);
    std::memcpy(words.data(), spirv.data(), words.size() * 4);
    return words;
  }
};

// All embedded shaders (generated source).
std::span<const ShaderInfo> shader_registry();

}  // namespace rill::vk
