// out[i] = value for i < n. out: [n] f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Out { float out_data[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { FillPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n) return;
  out_data[i] = p.value;
}
