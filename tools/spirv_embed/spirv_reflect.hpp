// Minimal SPIR-V reflection for compute shaders: descriptor bindings with their access, the
// push-constant block (its contract struct and that struct's members), specialization constants
// and the workgroup size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spirv_embed {

struct Binding {
  uint32_t set = 0, binding = 0;
  // "kStorageBuffer", "kUniformBuffer" or "kUniformTexelBuffer" (a samplerBuffer of floats, or a
  // usamplerBuffer with uint_texels: the engine views the bound tensor as 4-component texels of its
  // own type).
  std::string kind = "kStorageBuffer";
  bool non_writable = false, non_readable = false, uint_texels = false;
  std::string name;
};

struct SpecConstant {
  uint32_t id = 0;
  std::string type;  // "kBool", "kInt32", "kUint32", "kFloat32"
  uint32_t default_bits = 0;
  std::string name;
};

struct PushMember {
  std::string name;
  uint32_t offset = 0, bytes = 0;
};

struct Reflection {
  std::vector<Binding> bindings;
  uint32_t push_constant_bytes = 0;
  std::string push_block;  // the contract struct the block holds (shaders/include/contract/)
  std::vector<PushMember> push_members;
  std::vector<SpecConstant> spec_constants;
  uint32_t local_size[3] = {1, 1, 1};
  int32_t local_size_spec_id[3] = {-1, -1, -1};
};

// Returns false and sets `error` when the module is malformed or uses what rill cannot bind.
bool reflect(const std::vector<uint32_t>& words, Reflection& out, std::string& error);

}  // namespace spirv_embed
