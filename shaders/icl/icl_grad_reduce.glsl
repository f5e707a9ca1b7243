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

#ifdef RILL_ICL_TEXELS
// The `_tx` kernel (CPU drivers): the partials through a 4-element texel view, each lane summing
// whole texels. lavapipe compiles a storage-buffer load to a loop over the SIMD lanes, where a
// texel fetch gathers them (tools/rill/bench-icl-lavapipe/grad-reduce-texels.txt).
layout(binding = 0) uniform samplerBuffer partials;  // [params][models * model_stride] / 4
#else
layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [params][models * model_stride]
#endif
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
#ifdef RILL_ICL_TEXELS
    // Lane l sums tasks 4m .. 4m + 3 for m = l, l + WG_SIZE, ...: which lane sums a task, and in
    // which order, depends on the task alone, not on where the model's row starts within a texel,
    // so a model trains to the same bits in a grid as alone. A row that starts inside a texel
    // (shift r, the same for the whole workgroup) takes each group of 4 from two texels.
    const uint end = row + p.model_tasks, r = row & 3u;
    for (uint m = lane; 4u * m < p.model_tasks; m += WG_SIZE) {
      const uint first_texel = (row + 4u * m) >> 2u;
      const vec4 lo = texelFetch(partials, int(first_texel));
      vec4 hi = vec4(0.0);
      if (r != 0u && 4u * (first_texel + 1u) < end) hi = texelFetch(partials, int(first_texel + 1u));
      for (uint c = 0u; c < 4u; ++c) {
        if (4u * m + c < p.model_tasks) sum += r + c < 4u ? lo[r + c] : hi[r + c - 4u];
      }
    }
#else
    for (uint t = lane; t < p.model_tasks; t += WG_SIZE) sum += partials[row + t];
#endif
  } else {
    for (uint t = lane; t < p.model_tasks; t += WG_SIZE) sum += task_loss[first + t];
  }
  const float total = rill_workgroup_sum(sum);
  if (lane == 0u) reduced[index] = i < p.params ? total : total / float(p.model_tasks);
}
