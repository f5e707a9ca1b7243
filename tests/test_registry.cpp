// The kernel registry is read from the SPIR-V: bindings with access, push constants, spec
// constants and workgroup size must match what the GLSL declares.
#include <catch2/catch.hpp>

#include "../tools/spirv_embed/spirv_reflect.hpp"
#include "vk/shader_registry.hpp"
#include "vk/texel_views.hpp"

namespace {

const rill::vk::ShaderInfo* find(std::string_view kernel, std::string_view variant = "") {
  for (const auto& s : rill::vk::shader_registry())
    if (s.kernel == kernel && s.variant == variant) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("registry reflects fill: one write-only binding, 8 push bytes, WG_SIZE", "[registry]") {
  const auto* fill = find("util/fill");
  REQUIRE(fill != nullptr);
  REQUIRE(fill->bindings.size() == 1);
  CHECK(fill->bindings[0].access == rill::vk::BindingAccess::kWriteOnly);
  CHECK(fill->push_constant_bytes == 8);
  REQUIRE(fill->spec_constants.size() == 1);
  CHECK(fill->spec_constants[0].name == "WG_SIZE");
  CHECK(fill->spec_constants[0].default_bits == 256);
  CHECK(fill->local_size[0] == 256);
  CHECK(fill->local_size_spec_id[0] == 0);
  CHECK(fill->spirv.size() % 4 == 0);
  CHECK(fill->spirv_words().size() > 5);
  CHECK(fill->spirv_words()[0] == 0x07230203u);                     // the SPIR-V magic number, in host order
  CHECK(reinterpret_cast<uintptr_t>(fill->spirv.data()) % 4 == 0);  // what vkCreateShaderModule asks
}

TEST_CASE("registry reflects saxpy and its cpu variant", "[registry]") {
  const auto* gpu = find("util/saxpy");
  const auto* cpu = find("util/saxpy", "cpu");
  REQUIRE(gpu != nullptr);
  REQUIRE(cpu != nullptr);
  REQUIRE(gpu->bindings.size() == 2);
  CHECK(gpu->bindings[0].access == rill::vk::BindingAccess::kReadOnly);
  CHECK(gpu->bindings[1].access == rill::vk::BindingAccess::kReadWrite);
  REQUIRE(cpu->spec_constants.size() == 2);
  CHECK(cpu->spec_constants[1].name == "PER_THREAD");
  CHECK(cpu->spec_constants[1].default_bits == 16);
}

TEST_CASE("reflection rejects what is not a compute module", "[registry]") {
  spirv_embed::Reflection r;
  std::string error;
  CHECK_FALSE(spirv_embed::reflect({1, 2, 3}, r, error));
  CHECK(error.find("magic") != std::string::npos);
  // A valid header whose first instruction claims more words than the module has.
  CHECK_FALSE(spirv_embed::reflect({0x07230203u, 0x10000, 0, 10, 0, (50u << 16) | 17u}, r, error));
  CHECK(error.find("truncated") != std::string::npos);
}

TEST_CASE("every kernel's push constants are a named contract struct", "[registry]") {
  const auto* fill = find("util/fill");
  REQUIRE(fill != nullptr);
  CHECK(fill->push_block == "FillPush");
  for (const auto& s : rill::vk::shader_registry()) {
    INFO(s.kernel << " " << s.variant);
    CHECK(s.push_block.empty() == (s.push_constant_bytes == 0));
    // Within the 128 bytes every Vulkan device offers (pipelines.cpp refuses more by name where
    // a device offers less than a kernel takes).
    CHECK(s.push_constant_bytes <= 128);
  }
}

TEST_CASE("reflection refuses push constants outside a contract struct", "[registry]") {
  const auto* fill = find("util/fill");
  REQUIRE(fill != nullptr);
  std::vector<uint32_t> words = fill->spirv_words();
  spirv_embed::Reflection r;
  std::string error;
  REQUIRE(spirv_embed::reflect(words, r, error));
  CHECK(r.push_block == "FillPush");
  REQUIRE(r.push_members.size() == 2);
  CHECK(r.push_members[1].name == "value");
  CHECK(r.push_members[1].offset == 4);
  // Rename the block's member p (OpMemberName, opcode 6, string "p"): no longer the accepted form.
  bool renamed = false;
  for (size_t pos = 5; pos < words.size(); pos += words[pos] >> 16) {
    if ((words[pos] & 0xffffu) == 6 && (words[pos] >> 16) == 4 && words[pos + 3] == uint32_t('p')) {
      words[pos + 3] = uint32_t('q');
      renamed = true;
    }
  }
  REQUIRE(renamed);
  CHECK_FALSE(spirv_embed::reflect(words, r, error));
  CHECK(error.find("shaders/include/contract/") != std::string::npos);
}

TEST_CASE("registry reflects a samplerBuffer as a read-only uniform texel buffer binding", "[registry]") {
  const auto* ffn = find("lm/decode_ffn_tx_f32");
  REQUIRE(ffn != nullptr);
  REQUIRE(ffn->bindings.size() == 8);
  for (size_t i = 0; i < 5; ++i) CHECK(ffn->bindings[i].kind == rill::vk::DescriptorKind::kStorageBuffer);
  for (size_t i = 5; i < 8; ++i) {
    CHECK(ffn->bindings[i].kind == rill::vk::DescriptorKind::kUniformTexelBuffer);
    CHECK(ffn->bindings[i].access == rill::vk::BindingAccess::kReadOnly);
  }
  CHECK(ffn->bindings[5].name == "texels0");
  CHECK_FALSE(ffn->bindings[5].uint_texels);
  // A usamplerBuffer (the words of packed weights) is one too, marked as reading u32 texels.
  const auto* packed = find("matmul/matmul_tx_q8_f32", "cpu");
  REQUIRE(packed != nullptr);
  REQUIRE(packed->bindings.size() == 5);
  CHECK(packed->bindings[1].kind == rill::vk::DescriptorKind::kUniformTexelBuffer);
  CHECK(packed->bindings[1].uint_texels);
  CHECK(packed->bindings[4].kind == rill::vk::DescriptorKind::kUniformTexelBuffer);
  CHECK_FALSE(packed->bindings[4].uint_texels);
  CHECK_FALSE(packed->bindings[0].uint_texels);
}

TEST_CASE("registry merges variables aliasing one binding into one read-only binding", "[registry]") {
  // The dense decoding kernels read their weights as vec4s and as scalars (decode_common.glsl).
  const auto* logits = find("lm/decode_logits_f32");
  REQUIRE(logits != nullptr);
  REQUIRE(logits->bindings.size() == 5);
  CHECK(logits->bindings[4].kind == rill::vk::DescriptorKind::kStorageBuffer);
  CHECK(logits->bindings[4].access == rill::vk::BindingAccess::kReadOnly);
  CHECK(logits->bindings[3].access == rill::vk::BindingAccess::kWriteOnly);
}

// Lavapipe keys a kernel's compiled variant on bits 8-15 of each texel view's size being zero
// (texel_views.hpp): views keep one of them set, within the tensor's allocation.
TEST_CASE("texel views cover whole granules and keep a bit of 8-15 of their size set", "[registry]") {
  using rill::vk::texel_view_bytes;
  CHECK(texel_view_bytes(1 << 20, (1 << 20) + 256) == (1 << 20) + 256);  // 1 MiB: bits 8-15 zero
  CHECK(texel_view_bytes(600, 768) == 768);
  CHECK(texel_view_bytes(65536 + 16, 65536 + 512) == 65536 + 256);  // one granule: bit 8 set
  CHECK(texel_view_bytes(65536 + 256, 65536 + 256) == 65536 + 256);
  CHECK(texel_view_bytes(1 << 20, 1 << 20) == 1 << 20);  // no spare granule: the tensor's own bytes
}

TEST_CASE("texel views: whole texels within the device's limits, at an aligned offset", "[registry]") {
  rill::DeviceCaps caps;
  caps.max_texel_buffer_elements = 1000;
  caps.min_texel_buffer_offset_alignment = 16;
  caps.texel_buffer_f32x4 = true;
  using rill::DType;
  CHECK(rill::vk::check_texel_view(DType::kF32, 256, 16 * 1000, caps, "w").is_ok());
  CHECK(rill::vk::check_texel_view(DType::kF32, 0, 16 * 1001, caps, "w").code() == rill::StatusCode::kOutOfRange);
  const rill::Status partial = rill::vk::check_texel_view(DType::kF32, 0, 4 * 6, caps, "w");  // 6 elements
  CHECK(partial.code() == rill::StatusCode::kInvalidArgument);
  CHECK(partial.message().find("6 elements") != std::string::npos);
  CHECK(rill::vk::check_texel_view(DType::kF32, 8, 16, caps, "w").code() == rill::StatusCode::kFailedPrecondition);
  CHECK(rill::vk::check_texel_view(DType::kF16, 8, 8 * 3, caps, "w").code() == rill::StatusCode::kFailedPrecondition);
  CHECK(rill::vk::texel_format(DType::kF32, caps, "w").value() == VK_FORMAT_R32G32B32A32_SFLOAT);
  CHECK(rill::vk::texel_format(DType::kF16, caps, "w").status().code() == rill::StatusCode::kUnimplemented);
  CHECK(rill::vk::texel_format(DType::kI32, caps, "w").status().code() == rill::StatusCode::kUnimplemented);
  CHECK(rill::vk::texel_format(DType::kU32, caps, "w").status().code() == rill::StatusCode::kUnimplemented);
  caps.texel_buffer_u32x4 = true;
  CHECK(rill::vk::texel_format(DType::kU32, caps, "w").value() == VK_FORMAT_R32G32B32A32_UINT);
  CHECK(rill::vk::descriptor_type(rill::vk::DescriptorKind::kUniformTexelBuffer) ==
        VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER);
}
