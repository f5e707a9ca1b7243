// One walk over a SPIR-V module (vk/spirv_module.hpp):
// capabilities, specialization constants (with the values given, and the integer operations
// glslang folds array lengths into), types, and the Workgroup-class variables.
#include "vk/spirv_needs.hpp"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vk/spirv_module.hpp"

namespace rill::vk {

using namespace spirv;

namespace {

// The integer and logical operations OpSpecConstantOp may apply in a shader; nullopt: not one.
std::optional<uint32_t> fold(uint32_t opcode, const std::vector<uint32_t>& a) {
  auto arg = [&](size_t i) { return i < a.size() ? a[i] : 0u; };
  const uint32_t x = arg(0), y = arg(1);
  // Signed forms in 64 bits: -INT_MIN and INT_MIN / -1 (from a caller's spec constants) are defined.
  const int64_t sx = int32_t(x), sy = int32_t(y);
  switch (opcode) {
    case 113: case 114: return x;                      // UConvert, SConvert (32-bit here)
    case 126: return uint32_t(-sx);                    // SNegate
    case 128: return x + y;                            // IAdd
    case 130: return x - y;                            // ISub
    case 132: return x * y;                            // IMul
    case 134: return y == 0 ? std::nullopt : std::optional<uint32_t>(x / y);  // UDiv
    case 135: return sy == 0 ? std::nullopt : std::optional<uint32_t>(uint32_t(sx / sy));  // SDiv
    case 137: return y == 0 ? std::nullopt : std::optional<uint32_t>(x % y);  // UMod
    case 138: case 139:                                // SRem, SMod (non-negative sizes)
      return sy == 0 ? std::nullopt : std::optional<uint32_t>(uint32_t(sx % sy));
    case 164: return uint32_t(x == y);                 // LogicalEqual
    case 165: return uint32_t(x != y);                 // LogicalNotEqual
    case 166: return uint32_t(x || y);                 // LogicalOr
    case 167: return uint32_t(x && y);                 // LogicalAnd
    case 168: return uint32_t(!x);                     // LogicalNot
    case 169: return x ? y : arg(2);                   // Select
    case 170: return uint32_t(x == y);                 // IEqual
    case 171: return uint32_t(x != y);                 // INotEqual
    case 172: return uint32_t(x > y);                  // UGreaterThan
    case 173: return uint32_t(sx > sy);                // SGreaterThan
    case 174: return uint32_t(x >= y);                 // UGreaterThanEqual
    case 175: return uint32_t(sx >= sy);               // SGreaterThanEqual
    case 176: return uint32_t(x < y);                  // ULessThan
    case 177: return uint32_t(sx < sy);                // SLessThan
    case 178: return uint32_t(x <= y);                 // ULessThanEqual
    case 179: return uint32_t(sx <= sy);               // SLessThanEqual
    case 194: return y >= 32 ? 0u : x >> y;            // ShiftRightLogical
    case 195: return y >= 32 ? uint32_t(sx >> 31) : uint32_t(sx >> y);  // ShiftRightArithmetic
    case 196: return y >= 32 ? 0u : x << y;            // ShiftLeftLogical
    case 197: return x | y;
    case 198: return x ^ y;
    case 199: return x & y;
    case 200: return ~x;
    default: return std::nullopt;
  }
}

}  // namespace

Result<ShaderNeeds> shader_needs(std::span<const uint32_t> spirv, std::span<const uint32_t> spec_ids,
                                 std::span<const uint32_t> spec_values) {
  ShaderNeeds needs;
  std::unordered_map<uint32_t, uint32_t> spec_id_of;               // result id -> SpecId
  std::unordered_map<uint32_t, std::optional<uint32_t>> constant;  // result id -> value (unknown: nullopt)
  std::unordered_map<uint32_t, uint64_t> type_bytes;               // sized types
  std::unordered_map<uint32_t, uint32_t> pointee;                  // Workgroup pointer type -> pointee
  std::unordered_set<uint32_t> zero_length;                        // arrays of length 0, and types holding one
  auto spec_value = [&](uint32_t result, uint32_t declared) {
    auto id = spec_id_of.find(result);
    if (id != spec_id_of.end())
      for (size_t i = 0; i < spec_ids.size() && i < spec_values.size(); ++i)
        if (spec_ids[i] == id->second) return spec_values[i];
    return declared;
  };
  InstructionReader reader(spirv);
  Instruction instruction;
  while (reader.next(instruction)) {
    const uint32_t op = instruction.op, count = uint32_t(instruction.count());
    const uint32_t* w = instruction.words.data();
    auto bytes_of = [&](uint32_t type) -> Result<uint64_t> {
      auto it = type_bytes.find(type);
      // rill's shaders all size at their defaults: what does not is a caller's values (a division by 0).
      if (it == type_bytes.end())
        return invalid_argument("the specialization constants leave a shared-memory array without a size");
      return it->second;
    };
    switch (op) {
      case kOpCapability:
        switch (w[1]) {
          case kCapabilityGroupNonUniformArithmetic:
            needs.subgroup_arithmetic = true;
            break;
          case kCapabilityGroupNonUniformShuffle:
            needs.subgroup_shuffle = true;
            break;
          case kCapabilityStorageBuffer16BitAccess:
          case kCapabilityUniformAndStorageBuffer16BitAccess:
          case kCapabilityStoragePushConstant16:
            needs.storage_16bit = true;
            break;
          case kCapabilityFloat16:
            needs.float16 = true;
            break;
          case kCapabilityStorageBuffer8BitAccess:
          case kCapabilityUniformAndStorageBuffer8BitAccess:
          case kCapabilityStoragePushConstant8:
            needs.storage_8bit = true;
            break;
          case kCapabilityInt8:
            needs.int8 = true;
            break;
          case kCapabilityRoundingModeRTE:
            needs.rounding_rte = true;
            break;
          case kCapabilityCooperativeMatrixNV:
          case kCapabilityVulkanMemoryModel:
            needs.cooperative_matrix = true;
            break;
          default: break;
        }
        break;
      case kOpDecorate:
        if (count >= 4 && w[2] == kDecorationSpecId) spec_id_of[w[1]] = w[3];
        break;
      case kOpTypeBool: type_bytes[w[1]] = 4; break;
      case kOpTypeInt: case kOpTypeFloat: type_bytes[w[1]] = w[2] / 8; break;
      case kOpTypeVector: case kOpTypeMatrix: {
        RILL_ASSIGN_OR_RETURN(uint64_t part, bytes_of(w[2]));
        type_bytes[w[1]] = part * (w[3] == 3 ? 4 : w[3]);
        break;
      }
      case kOpTypeArray: {
        auto length = constant.find(w[3]);
        // Drivers take a function's arrays of length 0 in code that never runs (rill's kernels have
        // some at their defaults); shared memory of none is refused at the variable below.
        if ((length != constant.end() && length->second == 0u) || zero_length.count(w[2])) zero_length.insert(w[1]);
        if (type_bytes.count(w[2]) && length != constant.end() && length->second)
          type_bytes[w[1]] = type_bytes[w[2]] * *length->second;
        break;  // an array of unknown size only matters if a Workgroup variable uses it
      }
      case kOpTypeStruct: {
        uint64_t total = 0;
        bool sized = true;
        for (uint32_t i = 2; i < count; ++i) {
          if (zero_length.count(w[i])) zero_length.insert(w[1]);
          auto it = type_bytes.find(w[i]);
          if (it == type_bytes.end()) sized = false;
          else total += it->second;
        }
        if (sized) type_bytes[w[1]] = total;
        break;
      }
      case kOpTypePointer:
        if (w[2] == kStorageWorkgroup) pointee[w[1]] = w[3];
        break;
      case kOpConstantTrue: constant[w[2]] = 1u; break;
      case kOpConstantFalse: constant[w[2]] = 0u; break;
      case kOpConstant: constant[w[2]] = w[3]; break;
      case kOpSpecConstantTrue: constant[w[2]] = spec_value(w[2], 1u) != 0 ? 1u : 0u; break;
      case kOpSpecConstantFalse: constant[w[2]] = spec_value(w[2], 0u) != 0 ? 1u : 0u; break;
      case kOpSpecConstant: constant[w[2]] = spec_value(w[2], w[3]); break;
      case kOpSpecConstantOp: {
        std::vector<uint32_t> args;
        bool known = true;
        for (uint32_t i = 4; i < count; ++i) {
          auto it = constant.find(w[i]);
          if (it == constant.end() || !it->second) known = false;
          else args.push_back(*it->second);
        }
        constant[w[2]] = known ? fold(w[3], args) : std::nullopt;
        break;
      }
      case kOpVariable:
        if (w[3] == kStorageWorkgroup) {
          auto it = pointee.find(w[1]);
          if (it == pointee.end()) return internal_error("shader_needs: a Workgroup variable without its pointer type");
          // SPIR-V has no array of length 0: a driver's compiler given shared memory of none may fail.
          if (zero_length.count(it->second))
            return invalid_argument("the specialization constants give a shared-memory array a length of 0");
          RILL_ASSIGN_OR_RETURN(uint64_t size, bytes_of(it->second));
          needs.workgroup_memory_bytes += size;
        }
        break;
      default: break;
    }
  }
  if (!reader.error().empty()) return internal_error("shader_needs: " + reader.error());
  return needs;
}

Status check_shader_needs(const ShaderNeeds& needs, const DeviceInfo& device, std::string_view kernel) {
  const DeviceCaps& caps = device.caps;
  const std::string who = device.name + (device.limit_profile.empty() ? "" : " (limit profile " + device.limit_profile + ")");
  auto lacks = [&](const char* what) {
    return unimplemented("kernel " + std::string(kernel) + " needs " + what + ", which " + who + " lacks");
  };
  if (needs.subgroup_arithmetic && !caps.subgroup_arithmetic) return lacks("subgroup arithmetic");
  if (needs.subgroup_shuffle && !caps.subgroup_shuffle) return lacks("subgroup shuffles");
  if (needs.storage_16bit && !caps.storage_buffer_16bit) return lacks("16-bit storage buffers");
  if (needs.float16 && !caps.float16_arithmetic) return lacks("16-bit float arithmetic");
  if (needs.storage_8bit && !caps.storage_buffer_8bit) return lacks("8-bit storage buffers");
  if (needs.int8 && !caps.int8_arithmetic) return lacks("8-bit integer arithmetic");
  if (needs.rounding_rte && !caps.rounding_rte_f32) return lacks("f32 rounding declared to nearest even");
  if (needs.cooperative_matrix && caps.cooperative_matrix_f16[0] == 0)
    return lacks("cooperative matrices (VK_NV_cooperative_matrix with the Vulkan memory model)");
  if (needs.workgroup_memory_bytes > caps.shared_memory_bytes)
    return unimplemented("kernel " + std::string(kernel) + " declares " + std::to_string(needs.workgroup_memory_bytes) +
                         " bytes of shared memory, more than the " + std::to_string(caps.shared_memory_bytes) +
                         " of " + who);
  return Status::ok();
}

}  // namespace rill::vk
