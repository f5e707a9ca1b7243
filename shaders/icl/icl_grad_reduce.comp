// Sums the per-task gradients over each model's tasks, one invocation per (model, parameter), in
// task order, so the result does not depend on scheduling (bitwise reproducible). Invocation
// (model, params) does the same for the loss: out[model][params] = the model's mean task loss.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [params][models * model_tasks]
layout(std430, binding = 1) readonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 2) writeonly buffer Out { float reduced[]; };      // [models][params + 1]
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclReducePush p; };

void main() {
  const uint index = rill_global_index();
  if (index >= p.models * (p.params + 1u)) return;
  const uint model = index / (p.params + 1u), i = index % (p.params + 1u);
  const uint first = model * p.model_tasks;
  float sum = 0.0;
  if (i < p.params) {
    const uint row = i * p.models * p.model_tasks + first;
    for (uint t = 0u; t < p.model_tasks; ++t) sum += partials[row + t];
    reduced[index] = sum;
  } else {
    for (uint t = 0u; t < p.model_tasks; ++t) sum += task_loss[first + t];
    reduced[index] = sum / float(p.model_tasks);
  }
}
