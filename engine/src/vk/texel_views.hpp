// Uniform texel buffers, the one image-like descriptor rill binds. A kernel declares
// `uniform samplerBuffer` and reads four elements per texelFetch; the engine binds a view of the
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

// The format of 4-element texels of `dtype` (f32 or f16, where the device can back a uniform texel
// buffer with it), or an error that names the tensor (`where`).
Result<VkFormat> texel_format(DType dtype, const DeviceCaps& caps, const std::string& where);

// Checks that `bytes` of a tensor at buffer `offset` can be one view: whole texels, at most
// max_texel_buffer_elements of them, at an offset the device accepts.
Status check_texel_view(DType dtype, uint64_t offset, uint64_t bytes, const DeviceCaps& caps, const std::string& where);

// A view of [offset, offset + bytes) of `buffer` in `format` (arguments checked as above).
Result<UniqueBufferView> create_texel_view(Device& device, FaultInjector& faults, VkBuffer buffer, uint64_t offset,
                                           uint64_t bytes, VkFormat format);

}  // namespace rill::vk
