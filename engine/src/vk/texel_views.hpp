// Uniform texel buffers, the one image-like descriptor rill binds. A kernel declares
// `uniform samplerBuffer` (f32 and f16 tensors) or `uniform usamplerBuffer` (u32 tensors: the words
// of packed weights) and reads four elements per texelFetch; the engine binds a view of the
// tensor's bytes as texels of four of its elements. Why: on CPU drivers (lavapipe) a texel fetch
// gathers each lane's 16 bytes at once, where a storage-buffer load is a bounds-checked loop over
// the lanes for every component (twice the weight bandwidth of the decoding products measured).
#pragma once

#include <cstdint>
#include <string>

#include "rill/device.hpp"
#include "rill/status.hpp"
#include "rill/types.hpp"
#include "vk/shader_registry.hpp"
#include "vk/unique.hpp"

namespace rill::vk {

class FaultInjector;

VkDescriptorType descriptor_type(DescriptorKind kind);

// The format of 4-element texels of `dtype` (f32, f16, or u32 read as `usamplerBuffer`, where the
// device can back a uniform texel buffer with it), or an error that names the tensor (`where`).
Result<VkFormat> texel_format(DType dtype, const DeviceCaps& caps, const std::string& where);

// Checks that `bytes` of a tensor at buffer `offset` can be one view: whole texels, at most
// max_texel_buffer_elements of them, at an offset the device accepts.
Status check_texel_view(DType dtype, uint64_t offset, uint64_t bytes, const DeviceCaps& caps, const std::string& where);

// The bytes a texel view of a tensor of `bytes` covers, within its `allocated` bytes. Lavapipe
// (Mesa 22.3) compiles a kernel again at its first dispatch with each new key of its texel views,
// and two bits of a view's key depend on sizes: whether its buffer's size is a power of two, and
// whether bits 8-15 of the view's size are all zero (read through a union as a mip level). Each new
// key cost the texel matmul about 5 s of compilation (measured with Mesa's shader cache off). So
// buffers are never a power of two in size (vk/memory.cpp) and a view covers the tensor's
// 256-byte granules, plus the spare one the allocator keeps where bits 8-15 would be zero.
uint64_t texel_view_bytes(uint64_t bytes, uint64_t allocated);

// A view of [offset, offset + bytes) of `buffer` in `format` (arguments checked as above).
Result<UniqueBufferView> create_texel_view(Device& device, FaultInjector& faults, VkBuffer buffer, uint64_t offset,
                                           uint64_t bytes, VkFormat format);

}  // namespace rill::vk
