// RMSNorm backward for the gain, second level: dgain[c] = sum over blocks b, in order, of
// partial[b, c] (from rmsnorm_bwd_gain). partial: [blocks, dim] f32; dgain: [dim] f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, binding = 1) writeonly buffer Dgain { float dgain[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { RmsnormGainSumPush p; };

void main() {
  const uint c = rill_global_index();
  if (c >= p.dim) return;
  float sum = 0.0;
  for (uint b = 0; b < p.blocks; ++b) sum += partial[b * p.dim + c];
  dgain[c] = sum;
}
