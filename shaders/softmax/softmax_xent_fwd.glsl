// Softmax over each row of logits, one workgroup per row: probs = exp(x - max) / sum. With
// HAS_TARGETS also the cross-entropy loss[r] = logsumexp(x_r) - x_r[target_r] (a target outside
// the vocabulary gives loss = NaN, which the caller sees). logits, probs: [rows, vocab] sfloat;
// targets: [rows] u32; loss: [rows] f32.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const bool HAS_TARGETS = true;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { sfloat logits[]; };
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer Probs { sfloat probs[]; };
layout(std430, binding = 3) writeonly buffer Loss { float loss[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { SoftmaxPush p; };

#include "rill_reduce.glsl"
#include "row_softmax.glsl"

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform per workgroup
  const uint base = row * p.vocab;
  afloat m, sum;
  rill_row_softmax_stats(base, p.vocab, m, sum);
  const afloat inv = 1.0 / sum;
  // The target's logit is read before any probability is written: probs may be logits (in place).
  uint t = 0;
  afloat target_logit = 0.0;
  if (HAS_TARGETS && gl_LocalInvocationID.x == 0) {
    t = targets[row];
    if (t < p.vocab) target_logit = afloat(logits[base + t]);
  }
  barrier();
  for (uint c = gl_LocalInvocationID.x; c < p.vocab; c += WG_SIZE)
    probs[base + c] = to_sfloat(exp(afloat(logits[base + c]) - m) * inv);
  if (HAS_TARGETS && gl_LocalInvocationID.x == 0)
    // log(sum) - (x_t - m): rounds at the loss's scale, not at the largest logit's (m + log(sum) - x_t
    // lost 5e-4 of log 2 for logits of 1e4).
    loss[row] = t < p.vocab ? log(sum) - (target_logit - m) : uintBitsToFloat(0x7fc00000u);
}
