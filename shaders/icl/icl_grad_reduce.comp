// Sums the per-task gradients over the batch, one invocation per parameter, in task order, so the
// result does not depend on scheduling (bitwise reproducible). Invocation `params` does the same
// for the loss: out[params] = mean task loss.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [params][batch]
layout(std430, binding = 1) readonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 2) writeonly buffer Out { float reduced[]; };      // [params + 1]
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclReducePush p; };

void main() {
  const uint i = rill_global_index();
  if (i > p.params) return;
  float sum = 0.0;
  if (i < p.params) {
    for (uint t = 0u; t < p.batch; ++t) sum += partials[i * p.batch + t];
    reduced[i] = sum;
  } else {
    for (uint t = 0u; t < p.batch; ++t) sum += task_loss[t];
    reduced[i] = sum / float(p.batch);
  }
}
