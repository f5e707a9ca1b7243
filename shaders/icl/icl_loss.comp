// Loss and prediction of every task, for evaluation (icl_loss_terms.glsl has the formulas; a
// training step's backward computes them itself, with the gradient that seeds it).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Acts { float acts[]; };
layout(std430, binding = 1) readonly buffer Targets { float targets[]; };
layout(std430, binding = 2) writeonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 3) writeonly buffer Preds { float preds[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLossPush p; };
#include "icl_loss_terms.glsl"

void main() {
  const uint t = rill_global_index();
  if (t >= p.batch || t % p.model_stride >= p.model_tasks) return;  // idle slots stay out of the mean
  icl_task_loss(t, p.layers, p.loss_factor, p.model_tasks);
}
