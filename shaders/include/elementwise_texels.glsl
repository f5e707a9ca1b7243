// The bindings and units of the elementwise kernels (shaders/elementwise/). Plain: one element per
// invocation from storage buffers. With RILL_TEXEL_ROWS (their `_tx` variants, which CPU drivers
// run where the element count is a multiple of 4): 4 adjacent elements per invocation, inputs read
// as 4-element texels (vk/texel_views.hpp) and each output stored as one vector. On lavapipe a
// storage-buffer load loops over the lanes, element by element; a texel fetch gathers every lane's
// four at once.
#ifndef RILL_ELEMENTWISE_TEXELS_GLSL
#define RILL_ELEMENTWISE_TEXELS_GLSL
#extension GL_EXT_control_flow_attributes : require
#include "rill_common.glsl"

#ifdef RILL_TEXEL_ROWS
#define EW_INPUT(slot, Block, name) layout(binding = slot) uniform samplerBuffer name;
#define EW_OUTPUT(slot, Block, name) layout(std430, binding = slot) writeonly buffer Block { svec4 name[]; };
#define ew_value vec4
#define ew_store svec4
#define to_ew_store to_svec4
#define EW_READ(name, i) texelFetch(name, int(i))
#define EW_AT(v, e) v[e]
const uint EW_VEC = 4u;
#else
#define EW_INPUT(slot, Block, name) layout(std430, binding = slot) readonly buffer Block { sfloat name[]; };
#define EW_OUTPUT(slot, Block, name) layout(std430, binding = slot) writeonly buffer Block { sfloat name[]; };
#define ew_value afloat
#define ew_store sfloat
#define to_ew_store to_sfloat
#define EW_READ(name, i) afloat(name[i])
#define EW_AT(v, e) v
const uint EW_VEC = 1u;
#endif

#endif  // RILL_ELEMENTWISE_TEXELS_GLSL
