// One optimizer step for the whole model in a single workgroup: global gradient norm, a check
// that loss and gradient are finite, clipping, then SGD with momentum or Adam. Also advances the
// trainer's state (step counter read by the sampler, Adam's bias-correction powers) and records
// (loss, gradient norm) of the step in a ring the host reads every K steps, so the host does no
// per-step work.
//
// The state words are listed in contract/icl.glsl; the task-set cursor (icl_gather) advances by a
// batch per step.
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
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclOptimizePush p; };

bool finite(float x) { return !isnan(x) && !isinf(x); }

void main() {
  const uint lid = gl_LocalInvocationIndex;
  const uint step = state[kIclStateStep];
  const bool halted = state[kIclStateHalted] != 0u;
  const float b1pow = uintBitsToFloat(state[kIclStateBeta1Power]) * p.beta1;
  const float b2pow = uintBitsToFloat(state[kIclStateBeta2Power]) * p.beta2;

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
      if (OPTIMIZER == kIclSgd) {
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
  if (advance && p.set_tasks != 0u) state[kIclStateSetCursor] = (state[kIclStateSetCursor] + p.batch % p.set_tasks) % p.set_tasks;
  history[2u * slot] = loss;
  history[2u * slot + 1u] = norm;
  if (update) {
    state[kIclStateStep] = step + 1u;
    state[kIclStateBeta1Power] = floatBitsToUint(b1pow);
    state[kIclStateBeta2Power] = floatBitsToUint(b2pow);
    return;
  }
  state[kIclStateNonFinite] = (loss_ok ? 0u : 1u) | (grad_ok ? 0u : 2u);
  if (p.stop_on_nonfinite != 0u) {
    state[kIclStateHalted] = 1u;
    state[kIclStateHaltedStep] = step;
  } else {
    state[kIclStateSkipped] += 1u;
    state[kIclStateStep] = step + 1u;
  }
}
