// y[i] = a * x[i] + y[i] for i < n; PER_THREAD consecutive elements per invocation, which suits
// CPU drivers (lavapipe vectorises the loop and pays per invocation). x, y: [n] f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint PER_THREAD = 16;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { SaxpyPush p; };

void main() {
  const uint first = rill_global_index() * PER_THREAD;
  for (uint k = 0; k < PER_THREAD; ++k) {
    const uint i = first + k;
    if (i >= p.n) return;
    y[i] = p.a * x[i] + y[i];
  }
}
