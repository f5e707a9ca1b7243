// Sums the per-task gradients over each model's tasks: a workgroup per (model, parameter), its
// invocations reading neighbouring tasks (lane l takes tasks l, l + WG_SIZE, ...), then a
// deterministic workgroup reduction (rill_reduce.glsl), so the result does not depend on
// scheduling: the same bits every run. Workgroup (model, params) does the same for the loss:
// out[model][params] = the model's mean task loss. The engine sizes the workgroup per device
// (one subgroup on CPU drivers: no barrier; wider on GPUs, where a serial sum per parameter
// leaves the chip idle).
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;
#include "rill_reduce.glsl"

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [params][models * model_stride]
layout(std430, binding = 1) readonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 2) writeonly buffer Out { float reduced[]; };      // [models][params + 1]
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclReducePush p; };

void main() {
  const uint index = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (index >= p.models * (p.params + 1u)) return;  // uniform over the workgroup
  const uint lane = gl_LocalInvocationIndex;
  const uint model = index / (p.params + 1u), i = index % (p.params + 1u);
  const uint first = model * p.model_stride;
  float sum = 0.0;
  if (i < p.params) {
    const uint row = i * p.models * p.model_stride + first;
    for (uint t = lane; t < p.model_tasks; t += WG_SIZE) sum += partials[row + t];
  } else {
    for (uint t = lane; t < p.model_tasks; t += WG_SIZE) sum += task_loss[first + t];
  }
  const float total = rill_workgroup_sum(sum);
  if (lane == 0u) reduced[index] = i < p.params ? total : total / float(p.model_tasks);
}
