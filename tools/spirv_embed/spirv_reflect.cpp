// SPIR-V reflection by walking the instruction stream once (vk/spirv_module.hpp).
#include "spirv_reflect.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "vk/spirv_module.hpp"

namespace spirv_embed {

using namespace rill::spirv;

namespace {

struct Type {
  uint32_t op = 0;
  std::vector<uint32_t> operands;  // words after the result id
};

}  // namespace

bool reflect(const std::vector<uint32_t>& words, Reflection& out, std::string& error) {
  std::map<uint32_t, std::string> names;
  std::map<uint32_t, std::map<uint32_t, std::string>> member_names;  // struct id -> member -> name
  std::map<uint32_t, Type> types;
  std::map<uint32_t, uint32_t> constants;  // id -> value (32-bit scalars)
  std::map<uint32_t, std::map<uint32_t, uint32_t>> decorations;  // id -> decoration -> value
  std::map<uint32_t, std::map<uint32_t, std::map<uint32_t, uint32_t>>> member_decorations;
  struct SpecDecl { uint32_t type, id; uint32_t value; bool is_bool; };
  std::vector<SpecDecl> specs;
  struct Var { uint32_t pointer_type, id, storage_class; };
  std::vector<Var> vars;
  std::map<uint32_t, std::vector<uint32_t>> composites;  // spec-constant composites by id
  std::vector<uint32_t> local_size_ids;
  int entry_points = 0;

  InstructionReader reader(words);
  Instruction instruction;
  while (reader.next(instruction)) {
    const uint32_t op = instruction.op, count = uint32_t(instruction.count());
    const uint32_t* w = instruction.words.data();
    switch (op) {
      case kOpName:
        if (count >= 3) names[w[1]] = literal_string(instruction.words.subspan(2));
        break;
      case kOpMemberName:
        if (count >= 4) member_names[w[1]][w[2]] = literal_string(instruction.words.subspan(3));
        break;
      case kOpEntryPoint:
        ++entry_points;
        if (w[1] != kExecutionModelGLCompute) {
          error = "entry point is not a compute shader";
          return false;
        }
        break;
      case kOpExecutionMode:
        if (count >= 6 && w[2] == kExecutionModeLocalSize) {
          for (int i = 0; i < 3; ++i) out.local_size[i] = w[3 + i];
        }
        break;
      case kOpExecutionModeId:
        if (count >= 6 && w[2] == kExecutionModeLocalSizeId) local_size_ids = {w[3], w[4], w[5]};
        break;
      case kOpTypeBool: case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeMatrix:
      case kOpTypeArray:
      case kOpTypeRuntimeArray:
      case kOpTypeStruct:
      case kOpTypePointer:
      case kOpTypeImage:
      case kOpTypeSampledImage: {
        Type t;
        t.op = op;
        t.operands.assign(w + 2, w + count);
        types[w[1]] = t;
        break;
      }
      case kOpConstant:
        if (count >= 4) constants[w[2]] = w[3];
        break;
      case kOpSpecConstantTrue: case kOpSpecConstantFalse:
        specs.push_back({w[1], w[2], op == kOpSpecConstantTrue ? 1u : 0u, true});
        constants[w[2]] = op == kOpSpecConstantTrue ? 1u : 0u;
        break;
      case kOpSpecConstant:
        if (count != 4) {
          error = "64-bit specialization constants are not supported";
          return false;
        }
        specs.push_back({w[1], w[2], w[3], false});
        constants[w[2]] = w[3];
        break;
      case kOpSpecConstantComposite:
        composites[w[2]].assign(w + 3, w + count);
        break;
      case kOpVariable:
        if (count >= 4) vars.push_back({w[1], w[2], w[3]});
        break;
      case kOpDecorate:
        if (count >= 3) decorations[w[1]][w[2]] = count >= 4 ? w[3] : 1u;
        break;
      case kOpMemberDecorate:
        if (count >= 4) member_decorations[w[1]][w[2]][w[3]] = count >= 5 ? w[4] : 1u;
        break;
      default:
        break;
    }
  }
  if (!reader.error().empty()) {
    error = reader.error();
    return false;
  }
  if (entry_points != 1) {
    error = "expected exactly one entry point, found " + std::to_string(entry_points);
    return false;
  }

  auto has = [&](uint32_t id, uint32_t deco) {
    auto it = decorations.find(id);
    return it != decorations.end() && it->second.count(deco) != 0;
  };
  auto deco_value = [&](uint32_t id, uint32_t deco) { return decorations[id][deco]; };

  // Byte size of a type as laid out by explicit Offset / ArrayStride decorations.
  std::set<uint32_t> visiting;
  auto type_size = [&](auto&& self, uint32_t id) -> uint64_t {
    auto it = types.find(id);
    if (it == types.end() || !visiting.insert(id).second) return 0;
    const Type& t = it->second;
    uint64_t size = 0;
    switch (t.op) {
      case kOpTypeBool: size = 4; break;
      case kOpTypeInt: case kOpTypeFloat: size = t.operands[0] / 8; break;
      case kOpTypeVector: size = self(self, t.operands[0]) * t.operands[1]; break;
      case kOpTypeMatrix:
        size = uint64_t(deco_value(id, kDecorationMatrixStride)) * t.operands[1];
        break;
      case kOpTypeArray:
        size = uint64_t(deco_value(id, kDecorationArrayStride)) * constants[t.operands[1]];
        break;
      case kOpTypeStruct: {
        auto& md = member_decorations[id];
        for (size_t m = 0; m < t.operands.size(); ++m) {
          uint64_t end = md[uint32_t(m)][kDecorationOffset] + self(self, t.operands[m]);
          size = std::max(size, end);
        }
        break;
      }
      default: size = 0;
    }
    visiting.erase(id);
    return size;
  };

  // Workgroup size: the BuiltIn WorkgroupSize composite overrides the LocalSize mode.
  std::vector<uint32_t> size_ids = local_size_ids;
  for (const auto& [id, parts] : composites) {
    if (parts.size() == 3 && has(id, kDecorationBuiltIn) && deco_value(id, kDecorationBuiltIn) == kBuiltInWorkgroupSize)
      size_ids = parts;
  }
  for (size_t i = 0; i < size_ids.size() && i < 3; ++i) {
    uint32_t id = size_ids[i];
    if (constants.count(id)) out.local_size[i] = constants[id];
    if (has(id, kDecorationSpecId)) out.local_size_spec_id[i] = int32_t(deco_value(id, kDecorationSpecId));
  }

  for (const SpecDecl& s : specs) {
    if (!has(s.id, kDecorationSpecId)) continue;  // a spec-constant op result, not settable
    SpecConstant sc;
    sc.id = deco_value(s.id, kDecorationSpecId);
    sc.default_bits = s.value;
    sc.name = names.count(s.id) ? names[s.id] : "";
    if (s.is_bool) {
      sc.type = "kBool";
    } else {
      const Type& t = types[s.type];
      if (t.op == kOpTypeFloat && t.operands[0] == 32) sc.type = "kFloat32";
      else if (t.op == kOpTypeInt && t.operands[0] == 32) sc.type = t.operands[1] ? "kInt32" : "kUint32";
      else {
        error = "unsupported specialization-constant type for '" + sc.name + "'";
        return false;
      }
    }
    // glslang declares a second, unnamed constant with the same SpecId for local_size_x_id.
    auto same = std::find_if(out.spec_constants.begin(), out.spec_constants.end(),
                             [&](const SpecConstant& o) { return o.id == sc.id; });
    if (same != out.spec_constants.end()) {
      if (same->name.empty() && !sc.name.empty()) *same = sc;  // the declared one has the real default
      continue;
    }
    out.spec_constants.push_back(sc);
  }
  for (SpecConstant& sc : out.spec_constants)
    if (sc.name.empty()) sc.name = "spec" + std::to_string(sc.id);
  // A workgroup dimension set by a spec constant defaults to that constant's declared default.
  for (int d = 0; d < 3; ++d)
    for (const SpecConstant& sc : out.spec_constants)
      if (out.local_size_spec_id[d] >= 0 && sc.id == uint32_t(out.local_size_spec_id[d])) out.local_size[d] = sc.default_bits;
  std::sort(out.spec_constants.begin(), out.spec_constants.end(),
            [](const SpecConstant& a, const SpecConstant& b) { return a.id < b.id; });

  for (const Var& v : vars) {
    auto pt = types.find(v.pointer_type);
    if (pt == types.end() || pt->second.op != kOpTypePointer) continue;
    const uint32_t pointee = pt->second.operands[1];
    if (v.storage_class == kStoragePushConstant) {
      out.push_constant_bytes = uint32_t(type_size(type_size, pointee));
      // The one accepted form: `uniform PushBlock { SomePush p; }` with SomePush a contract struct,
      // so the engine can name and check the struct a dispatch pushes.
      const Type& block = types[pointee];
      const auto inner = block.operands.size() == 1 ? types.find(block.operands[0]) : types.end();
      if (inner == types.end() || inner->second.op != kOpTypeStruct || member_names[pointee][0] != "p" ||
          member_decorations[pointee][0][kDecorationOffset] != 0 || names[block.operands[0]].empty()) {
        error =
            "push constants must be declared as one member p of a struct from "
            "shaders/include/contract/: layout(push_constant) uniform PushBlock { SomePush p; };";
        return false;
      }
      const uint32_t contract = block.operands[0];
      out.push_block = names[contract];
      for (size_t m = 0; m < inner->second.operands.size(); ++m)
        out.push_members.push_back({member_names[contract][uint32_t(m)],
                                    member_decorations[contract][uint32_t(m)][kDecorationOffset],
                                    uint32_t(type_size(type_size, inner->second.operands[m]))});
      continue;
    }
    if (v.storage_class == kStorageUniformConstant) {
      // The one image type rill binds: a sampled buffer of floats (`uniform samplerBuffer`) or of
      // unsigned ints (`uniform usamplerBuffer`, for u32 tensors), read with texelFetch (the engine
      // views the tensor as texels of 4 of its elements).
      const Type& t = types[pointee];
      const Type* image = t.op == kOpTypeSampledImage ? &types[t.operands[0]] : &t;
      const bool is_image = image->op == kOpTypeImage && image->operands.size() >= 6;
      const Type* sampled = is_image ? &types[image->operands[0]] : nullptr;
      const bool float_texels = is_image && sampled->op == kOpTypeFloat;
      const bool uint_texels = is_image && sampled->op == kOpTypeInt && sampled->operands.size() >= 2 &&
                               sampled->operands[0] == 32 && sampled->operands[1] == 0;
      constexpr uint32_t kDimBuffer = 5, kSampled = 1;
      if (!(float_texels || uint_texels) || image->operands[1] != kDimBuffer || image->operands[5] != kSampled) {
        error = "variable '" + names[v.id] +
                "' is an image or sampler other than a samplerBuffer of floats or a usamplerBuffer; rill binds "
                "buffers and those only";
        return false;
      }
      Binding b;
      b.set = deco_value(v.id, kDecorationDescriptorSet);
      b.binding = deco_value(v.id, kDecorationBinding);
      b.kind = "kUniformTexelBuffer";
      b.uint_texels = uint_texels;
      b.name = names[v.id];
      b.non_writable = true;
      out.bindings.push_back(b);
      continue;
    }
    if (v.storage_class != kStorageUniform && v.storage_class != kStorageStorageBuffer) continue;
    Binding b;
    b.set = deco_value(v.id, kDecorationDescriptorSet);
    b.binding = deco_value(v.id, kDecorationBinding);
    const bool storage = v.storage_class == kStorageStorageBuffer || has(pointee, kDecorationBufferBlock);
    b.kind = storage ? "kStorageBuffer" : "kUniformBuffer";
    b.name = names[v.id];
    if (b.name.empty()) b.name = names[pointee];
    // readonly/writeonly sit on the variable or on every member of the block.
    b.non_writable = has(v.id, kDecorationNonWritable);
    b.non_readable = has(v.id, kDecorationNonReadable);
    auto& members = member_decorations[pointee];
    const size_t member_count = types[pointee].operands.size();
    if (member_count > 0) {
      bool all_nw = true, all_nr = true;
      for (size_t m = 0; m < member_count; ++m) {
        all_nw = all_nw && members[uint32_t(m)].count(kDecorationNonWritable);
        all_nr = all_nr && members[uint32_t(m)].count(kDecorationNonReadable);
      }
      b.non_writable = b.non_writable || all_nw;
      b.non_readable = b.non_readable || all_nr;
    }
    out.bindings.push_back(b);
  }
  std::sort(out.bindings.begin(), out.bindings.end(), [](const Binding& a, const Binding& b) {
    return a.set != b.set ? a.set < b.set : a.binding < b.binding;
  });
  // Variables sharing a binding alias one descriptor (a buffer read as vec4s and as scalars): one
  // binding, writable or readable if any alias is.
  std::vector<Binding> merged;
  for (const Binding& b : out.bindings) {
    if (merged.empty() || merged.back().set != b.set || merged.back().binding != b.binding) {
      merged.push_back(b);
      continue;
    }
    Binding& m = merged.back();
    if (m.kind != b.kind || m.uint_texels != b.uint_texels) {
      error = "variables '" + m.name + "' and '" + b.name + "' share binding " + std::to_string(b.binding) +
              " as different descriptor types";
      return false;
    }
    m.non_writable = m.non_writable && b.non_writable;
    m.non_readable = m.non_readable && b.non_readable;
  }
  out.bindings = std::move(merged);
  for (size_t i = 0; i < out.bindings.size(); ++i) {
    if (out.bindings[i].set != 0) {
      error = "binding '" + out.bindings[i].name + "' uses descriptor set " +
              std::to_string(out.bindings[i].set) + "; rill kernels use set 0 only";
      return false;
    }
    if (out.bindings[i].binding != i) {
      error = "bindings must be numbered 0..N-1 without gaps; found " +
              std::to_string(out.bindings[i].binding) + " at position " + std::to_string(i);
      return false;
    }
  }
  return true;
}

}  // namespace spirv_embed
