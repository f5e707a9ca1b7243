// One optimizer step for the whole model in a single workgroup: global gradient norm, a check
// that loss and gradient are finite, clipping, then SGD with momentum or Adam. Also advances the
// trainer's state (step counter read by the sampler, Adam's bias-correction powers) and records
// (loss, gradient norm) of the step in a ring the host reads every K steps, so the host does no
// per-step work.
//
// State words: 0 step, 1 halted, 2 step at which it halted, 3 what went non-finite (bit 0 loss,
// bit 1 gradient), 4 skipped batches, 5 beta1^step, 6 beta2^step (float bits), 7 the cursor of a
// task set being trained on (icl_gather), advanced by a batch per step.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint OPTIMIZER = 1;  // 0 SGD with momentum, 1 Adam
layout(local_size_x_id = 0) in;
#include "rill_reduce.glsl"

layout(std430, binding = 0) buffer State { uint state[]; };
layout(std430, binding = 1) readonly buffer Reduced { float reduced[]; };  // grads, then the loss
layout(std430, binding = 2) buffer Params { float params[]; };
layout(std430, binding = 3) buffer Moment1 { float m1[]; };  // SGD velocity or Adam m
layout(std430, binding = 4) buffer Moment2 { float m2[]; };  // Adam v (unused by SGD)
layout(std430, binding = 5) writeonly buffer History { float history[]; };  // [capacity][2]
layout(push_constant) uniform Push {
  uint params;
  uint history_capacity;
  uint stop_on_nonfinite;  // 1: halt (no more updates); 0: skip the batch and go on
  float lr;
  float beta1;  // SGD: momentum
  float beta2;
  float eps;
  float clip_norm;  // <= 0: no clipping
  uint set_tasks;   // tasks in the task set trained on; 0: tasks are sampled
  uint batch;
} p;

bool finite(float x) { return !isnan(x) && !isinf(x); }

void main() {
  const uint lid = gl_LocalInvocationIndex;
  const uint step = state[0];
  const bool halted = state[1] != 0u;
  const float b1pow = uintBitsToFloat(state[5]) * p.beta1;
  const float b2pow = uintBitsToFloat(state[6]) * p.beta2;

  float sq = 0.0;
  for (uint i = lid; i < p.params; i += WG_SIZE) sq += reduced[i] * reduced[i];
  const float norm = sqrt(rill_workgroup_sum(sq));
  const float loss = reduced[p.params];
  if (halted) return;  // uniform: every invocation read the same state

  const bool loss_ok = finite(loss);
  const bool grad_ok = finite(norm);
  const bool update = loss_ok && grad_ok;
  if (update) {
    const float clip = (p.clip_norm > 0.0 && norm > p.clip_norm) ? p.clip_norm / norm : 1.0;
    for (uint i = lid; i < p.params; i += WG_SIZE) {
      const float g = reduced[i] * clip;
      if (OPTIMIZER == 0u) {
        const float v = p.beta1 * m1[i] + g;
        m1[i] = v;
        params[i] -= p.lr * v;
      } else {
        const float m = p.beta1 * m1[i] + (1.0 - p.beta1) * g;
        const float v = p.beta2 * m2[i] + (1.0 - p.beta2) * g * g;
        m1[i] = m;
        m2[i] = v;
        const float m_hat = m / (1.0 - b1pow);
        const float v_hat = v / (1.0 - b2pow);
        params[i] -= p.lr * m_hat / (sqrt(v_hat) + p.eps);
      }
    }
  }
  barrier();  // every invocation has read the state before it changes
  if (lid != 0u) return;
  const uint slot = step % p.history_capacity;
  const bool advance = update || p.stop_on_nonfinite == 0u;  // the step moves on to the next batch
  if (advance && p.set_tasks != 0u) state[7] = (state[7] + p.batch % p.set_tasks) % p.set_tasks;
  history[2u * slot] = loss;
  history[2u * slot + 1u] = norm;
  if (update) {
    state[0] = step + 1u;
    state[5] = floatBitsToUint(b1pow);
    state[6] = floatBitsToUint(b2pow);
    return;
  }
  state[3] = (loss_ok ? 0u : 1u) | (grad_ok ? 0u : 2u);
  if (p.stop_on_nonfinite != 0u) {
    state[1] = 1u;
    state[2] = step;
  } else {
    state[4] += 1u;
    state[0] = step + 1u;
  }
}
