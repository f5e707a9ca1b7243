// dst[i] = float(src[i]) for i < n. src: [n] f16, dst: [n] f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#define RILL_STORAGE_F16
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { sfloat src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n) return;
  dst[i] = afloat(src[i]);
}
