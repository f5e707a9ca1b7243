// The SPIR-V module format as rill reads it (numbers from the SPIR-V 1.6 specification): the
// opcodes and enumerants, and one walk over the instruction stream. Two readers share it: the
// build-time reflection that makes the kernel registry (tools/spirv_embed) and the check of what a
// kernel needs from the device when its pipeline is made (vk/spirv_needs.cpp). Header-only and
// standard C++ only, so the build tool compiles it for the build machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rill::spirv {

inline constexpr uint32_t kMagic = 0x07230203u;
inline constexpr size_t kHeaderWords = 5;

enum Op : uint32_t {
  kOpName = 5,
  kOpMemberName = 6,
  kOpEntryPoint = 15,
  kOpExecutionMode = 16,
  kOpCapability = 17,
  kOpTypeBool = 20,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypeVector = 23,
  kOpTypeMatrix = 24,
  kOpTypeImage = 25,
  kOpTypeSampledImage = 27,
  kOpTypeArray = 28,
  kOpTypeRuntimeArray = 29,
  kOpTypeStruct = 30,
  kOpTypePointer = 32,
  kOpConstantTrue = 41,
  kOpConstantFalse = 42,
  kOpConstant = 43,
  kOpSpecConstantTrue = 48,
  kOpSpecConstantFalse = 49,
  kOpSpecConstant = 50,
  kOpSpecConstantComposite = 51,
  kOpSpecConstantOp = 52,
  kOpVariable = 59,
  kOpDecorate = 71,
  kOpMemberDecorate = 72,
  kOpExecutionModeId = 331,
};
enum Decoration : uint32_t {
  kDecorationSpecId = 1,
  kDecorationBlock = 2,
  kDecorationBufferBlock = 3,
  kDecorationArrayStride = 6,
  kDecorationMatrixStride = 7,
  kDecorationBuiltIn = 11,
  kDecorationNonWritable = 24,
  kDecorationNonReadable = 25,
  kDecorationBinding = 33,
  kDecorationDescriptorSet = 34,
  kDecorationOffset = 35,
};
enum StorageClass : uint32_t {
  kStorageUniformConstant = 0,
  kStorageUniform = 2,
  kStorageWorkgroup = 4,
  kStoragePushConstant = 9,
  kStorageStorageBuffer = 12,
};
enum Capability : uint32_t {
  kCapabilityFloat16 = 9,
  kCapabilityInt8 = 39,
  kCapabilityGroupNonUniformArithmetic = 63,
  kCapabilityGroupNonUniformShuffle = 65,
  kCapabilityStorageBuffer16BitAccess = 4433,
  kCapabilityUniformAndStorageBuffer16BitAccess = 4434,
  kCapabilityStoragePushConstant16 = 4435,
  kCapabilityStorageBuffer8BitAccess = 4448,
  kCapabilityUniformAndStorageBuffer8BitAccess = 4449,
  kCapabilityStoragePushConstant8 = 4450,
  kCapabilityRoundingModeRTE = 4467,
  kCapabilityVulkanMemoryModel = 5345,
  kCapabilityCooperativeMatrixNV = 5357,
};
inline constexpr uint32_t kExecutionModelGLCompute = 5;
inline constexpr uint32_t kExecutionModeLocalSize = 17, kExecutionModeLocalSizeId = 38;
inline constexpr uint32_t kBuiltInWorkgroupSize = 25;

// One instruction: its opcode and its words (the opcode word first, then the operands).
struct Instruction {
  uint32_t op = 0;
  std::span<const uint32_t> words;
  size_t count() const { return words.size(); }
  uint32_t operator[](size_t i) const { return words[i]; }
};

// The instructions of a module in order: `while (reader.next(instruction)) ...`; afterwards
// error() is empty when the walk reached the end of the module, else it says what is malformed.
class InstructionReader {
 public:
  explicit InstructionReader(std::span<const uint32_t> module) : module_(module) {
    if (module.size() < kHeaderWords || module[0] != kMagic) error_ = "not a SPIR-V module (bad magic or too short)";
  }
  bool next(Instruction& out) {
    if (!error_.empty() || pos_ >= module_.size()) return false;
    const uint32_t count = module_[pos_] >> 16;
    if (count == 0 || pos_ + count > module_.size()) {
      error_ = "truncated instruction at word " + std::to_string(pos_);
      return false;
    }
    out.op = module_[pos_] & 0xffffu;
    out.words = module_.subspan(pos_, count);
    pos_ += count;
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  std::span<const uint32_t> module_;
  size_t pos_ = kHeaderWords;
  std::string error_;
};

// A literal string operand: UTF-8 bytes packed four to a word, lowest byte first, NUL-terminated.
inline std::string literal_string(std::span<const uint32_t> words) {
  std::string s;
  for (uint32_t word : words)
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((word >> (8 * b)) & 0xffu);
      if (c == 0) return s;
      s.push_back(c);
    }
  return s;
}

}  // namespace rill::spirv
