// RMSNorm backward for the gain, second level: dgain[c] = the sum over blocks b of partial[b, c]
// (from rmsnorm_bwd_gain or rmsnorm_bwd_register), in a fixed order. partial: [blocks, dim] f32;
// dgain: [dim] f32. With SLICES > 1 (GPUs; a column's walk over hundreds of blocks is a chain of
// memory waits) a workgroup takes WG_SIZE / SLICES neighbouring columns, invocation (slice s,
// column) summing blocks s, s + SLICES, ... in order, and the slices' sums are then added in order
// (the same bits on every run). SLICES 1: one invocation walks a column's blocks.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint SLICES = 1;  // divides WG_SIZE
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, binding = 1) writeonly buffer Dgain { float dgain[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { RmsnormGainSumPush p; };

const uint COLUMNS = WG_SIZE / SLICES;  // per workgroup
shared float slice_sums[SLICES > 1u ? WG_SIZE : 1u];

void main() {
  const uint lid = gl_LocalInvocationID.x, slice = lid / COLUMNS;
  const uint c = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * COLUMNS + lid % COLUMNS;
  float sum = 0.0;
  if (c < p.dim)
    for (uint b = slice; b < p.blocks; b += SLICES) sum += partial[b * p.dim + c];
  if (SLICES == 1u) {
    if (c < p.dim) dgain[c] = sum;
    return;
  }
  slice_sums[lid] = sum;
  barrier();  // every slice's sum -> their ordered sum
  if (slice == 0u && c < p.dim) {
    for (uint s = 1u; s < SLICES; ++s) sum += slice_sums[s * COLUMNS + lid];
    dgain[c] = sum;
  }
}
