// Loss of every task and the gradient that seeds the backward pass. pred = -(label slot of the
// query token after the last layer); loss_t = c (pred - target)^2; the gradient of the batch mean
// with respect to the output tokens is zero except d/d(query label) = -2 c (pred - target) / batch,
// the batch being the task's model's tasks.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Acts { float acts[]; };
layout(std430, binding = 1) readonly buffer Targets { float targets[]; };
layout(std430, binding = 2) writeonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 3) writeonly buffer Preds { float preds[]; };
layout(std430, binding = 4) writeonly buffer Grad { float grad[]; };  // [TOKEN_ELEMS][batch]
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLossPush p; };

void main() {
  const uint t = rill_global_index();
  if (t >= p.batch || t % p.model_stride >= p.model_tasks) return;  // idle slots stay out of the mean
  const uint query_label = NCTX * D1 + (D1 - 1u);
  const float pred = -acts[(p.layers * TOKEN_ELEMS + query_label) * p.batch + t];
  const float diff = pred - targets[t];
  task_loss[t] = p.loss_factor * diff * diff;
  preds[t] = pred;
  if (p.write_grad == 0u) return;
  for (uint e = 0u; e < TOKEN_ELEMS; ++e) grad[e * p.batch + t] = 0.0;
  grad[query_label * p.batch + t] = -2.0 * p.loss_factor * diff / float(p.model_tasks);
}
