// Uniform texel buffer views (texel_views.hpp).
#include "vk/texel_views.hpp"

#include "vk/device.hpp"
#include "vk/faults.hpp"

namespace rill::vk {

VkDescriptorType descriptor_type(DescriptorKind kind) {
  switch (kind) {
    case DescriptorKind::kStorageBuffer:
      return VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    case DescriptorKind::kUniformBuffer:
      return VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    case DescriptorKind::kUniformTexelBuffer:
      return VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
  }
  return VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

Result<VkFormat> texel_format(DType dtype, const DeviceCaps& caps, const std::string& where) {
  if (dtype == DType::kF32 && caps.texel_buffer_f32x4) return VK_FORMAT_R32G32B32A32_SFLOAT;
  if (dtype == DType::kF16 && caps.texel_buffer_f16x4) return VK_FORMAT_R16G16B16A16_SFLOAT;
  if (dtype == DType::kU32 && caps.texel_buffer_u32x4) return VK_FORMAT_R32G32B32A32_UINT;
  return unimplemented(where +
                       ": a texel binding reads f32, f16 or u32 tensors in formats the device supports; this one is " +
                       dtype_name(dtype));
}

Status check_texel_view(DType dtype, uint64_t offset, uint64_t bytes, const DeviceCaps& caps,
                        const std::string& where) {
  const uint64_t texel = 4ull * dtype_size(dtype);
  if (bytes == 0 || bytes % texel != 0)
    return invalid_argument(where + ": a texel binding needs whole texels of 4 elements; the tensor has " +
                            std::to_string(bytes / dtype_size(dtype)) + " elements");
  if (bytes / texel > caps.max_texel_buffer_elements)
    return out_of_range(where + ": " + std::to_string(bytes / texel) + " texels are more than the device's " +
                        "maxTexelBufferElements of " + std::to_string(caps.max_texel_buffer_elements));
  if (caps.min_texel_buffer_offset_alignment > 0 && offset % caps.min_texel_buffer_offset_alignment != 0)
    return failed_precondition(where + ": the tensor's offset " + std::to_string(offset) +
                               " is not a multiple of the device's minTexelBufferOffsetAlignment (" +
                               std::to_string(caps.min_texel_buffer_offset_alignment) + ")");
  return Status::ok();
}

uint64_t texel_view_bytes(uint64_t bytes, uint64_t allocated) {
  const uint64_t granules = (bytes + 255) / 256 * 256;
  const uint64_t view = ((granules >> 8) & 0xff) != 0 ? granules : granules + 256;
  return view <= allocated ? view : bytes;
}

Result<UniqueBufferView> create_texel_view(Device& device, FaultInjector& faults, VkBuffer buffer, uint64_t offset,
                                           uint64_t bytes, VkFormat format) {
  VkBufferViewCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  info.buffer = buffer;
  info.format = format;
  info.offset = offset;
  info.range = bytes;
  VkDevice dev = device.handle();
  const auto& fn = device.fn();
  return create_unique<UniqueBufferView>(device, faults, "vkCreateBufferView",
                                         [&](auto* out) { return fn.vkCreateBufferView(dev, &info, nullptr, out); });
}

}  // namespace rill::vk
