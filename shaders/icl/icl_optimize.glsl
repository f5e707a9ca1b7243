// One optimizer step per model, a workgroup each (a cohort's models, see IclModelEntry): global
// gradient norm, a check that loss, gradient and the step's new values are finite, clipping, then
// SGD with momentum or Adam. Also advances the model's state (step counter read by the sampler, Adam's bias-correction powers) and records
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

#include "contract/icl.glsl"
layout(std430, binding = 0) buffer State { uint state[]; };  // [models][kIclStateWords]
layout(std430, binding = 1) readonly buffer Models { IclModelEntry models[]; };
layout(std430, binding = 2) readonly buffer Reduced { float reduced[]; };  // [models][grads, then the loss]
layout(std430, binding = 3) buffer Params { float params[]; };             // [models][params]
layout(std430, binding = 4) buffer Moment1 { float m1[]; };  // SGD velocity or Adam m
layout(std430, binding = 5) buffer Moment2 { float m2[]; };  // Adam v (unused by SGD)
layout(std430, binding = 6) writeonly buffer History { float history[]; };  // [models][capacity][2]
layout(push_constant) uniform PushBlock { IclOptimizePush p; };

// By the exponent bits: without SignedZeroInfNanPreserve a compiler may assume no NaN or infinity
// and fold isnan/isinf away, and the step would never halt.
bool finite(float x) { return (floatBitsToUint(x) & 0x7F800000u) != 0x7F800000u; }

// What a step writes for parameter `i`: its new value and moments (SGD keeps no second moment).
void stepped(IclModelEntry e, uint pw, uint rw, uint i, float clip, float b1pow, float b2pow, out float param,
             out float moment1, out float moment2) {
  const float g = reduced[rw + i] * clip;
  if (OPTIMIZER == kIclSgd) {
    moment1 = e.beta1 * m1[pw + i] + g;
    moment2 = 0.0;
    param = params[pw + i] - e.lr * moment1;
  } else {
    moment1 = e.beta1 * m1[pw + i] + (1.0 - e.beta1) * g;
    moment2 = e.beta2 * m2[pw + i] + (1.0 - e.beta2) * g * g;
    const float m_hat = moment1 / (1.0 - b1pow);
    const float v_hat = moment2 / (1.0 - b2pow);
    param = params[pw + i] - e.lr * m_hat / (sqrt(v_hat) + e.eps);
  }
}

void main() {
  const uint lid = gl_LocalInvocationIndex;
  const uint model = gl_WorkGroupID.x;
  const IclModelEntry e = models[model];
  const uint sw = model * kIclStateWords;             // this model's state words
  const uint pw = model * p.params;                   // its parameters and moments
  const uint rw = model * (p.params + 1u);            // its reduced gradient, then its loss
  const uint hw = model * p.history_capacity * 2u;    // its loss ring
  const uint step = state[sw + kIclStateStep];
  const bool halted = state[sw + kIclStateHalted] != 0u;
  const float b1pow = uintBitsToFloat(state[sw + kIclStateBeta1Power]) * e.beta1;
  const float b2pow = uintBitsToFloat(state[sw + kIclStateBeta2Power]) * e.beta2;

  float sq = 0.0;
  for (uint i = lid; i < p.params; i += WG_SIZE) sq += reduced[rw + i] * reduced[rw + i];
  float norm = sqrt(rill_workgroup_sum(sq));
  // Squares past f32 of a gradient maybe finite: its norm by scaling, where clipping will bring it
  // back (unclipped, Adam's g * g would overflow the moment and freeze the parameters: halted).
  if (!finite(norm) && e.clip_norm > 0.0) {  // uniform: a workgroup sum and the model's entry
    float largest = 0.0;
    for (uint i = lid; i < p.params; i += WG_SIZE) largest = max(largest, abs(reduced[rw + i]));
    largest = rill_workgroup_max(largest);
    if (finite(largest)) {  // the norm of the gradient scaled by a power of two, scaled back
      int exponent;
      frexp(largest, exponent);
      exponent = min(exponent, 126);  // ldexp may flush for exponents below -126; squares stay <= 16
      float scaled = 0.0;
      for (uint i = lid; i < p.params; i += WG_SIZE) {
        const float g = ldexp(reduced[rw + i], -exponent);
        scaled += g * g;
      }
      norm = ldexp(sqrt(rill_workgroup_sum(scaled)), exponent);  // inf only where the norm is
    }
  }
  const float loss = reduced[rw + p.params];
  if (halted) return;  // uniform: every invocation read the same state

  const bool loss_ok = finite(loss);
  const bool grad_ok = finite(norm);
  const float clip = (e.clip_norm > 0.0 && norm > e.clip_norm) ? e.clip_norm / norm : 1.0;
  // A finite gradient can still overflow the parameters (SGD at a huge learning rate): the step is
  // worked out once to check every new value, then again to write it, so that a step that would
  // overflow is not taken, like one whose gradient is not finite.
  bool fits = true;
  if (loss_ok && grad_ok) {  // uniform: a workgroup sum and the model's entry
    float overflows = 0.0;
    for (uint i = lid; i < p.params; i += WG_SIZE) {
      float param, moment1, moment2;
      stepped(e, pw, rw, i, clip, b1pow, b2pow, param, moment1, moment2);
      if (!finite(param) || !finite(moment1) || !finite(moment2)) overflows = 1.0;
    }
    fits = rill_workgroup_max(overflows) == 0.0;
  }
  const bool update = loss_ok && grad_ok && fits;
  if (update) {
    for (uint i = lid; i < p.params; i += WG_SIZE) {
      float param, moment1, moment2;
      stepped(e, pw, rw, i, clip, b1pow, b2pow, param, moment1, moment2);
      params[pw + i] = param;
      m1[pw + i] = moment1;
      if (OPTIMIZER != kIclSgd) m2[pw + i] = moment2;
    }
  }
  barrier();  // every invocation has read the state before it changes
  if (lid != 0u) return;
  const uint slot = step % p.history_capacity;
  const bool advance = update || e.stop_on_nonfinite == 0u;  // the step moves on to the next batch
  if (advance && p.set_tasks != 0u)
    state[sw + kIclStateSetCursor] = (state[sw + kIclStateSetCursor] + p.batch % p.set_tasks) % p.set_tasks;
  history[hw + 2u * slot] = loss;
  history[hw + 2u * slot + 1u] = norm;
  if (update) {
    state[sw + kIclStateStep] = step + 1u;
    state[sw + kIclStateBeta1Power] = floatBitsToUint(b1pow);
    state[sw + kIclStateBeta2Power] = floatBitsToUint(b2pow);
    return;
  }
  state[sw + kIclStateNonFinite] = (loss_ok ? 0u : 1u) | (grad_ok ? 0u : 2u) | (fits ? 0u : 4u);
  if (e.stop_on_nonfinite != 0u) {
    state[sw + kIclStateHalted] = 1u;
    state[sw + kIclStateHaltedStep] = step;
  } else {
    state[sw + kIclStateSkipped] += 1u;
    state[sw + kIclStateStep] = step + 1u;
  }
}
