// Log-probabilities of given next tokens, for scoring a text: log_probs[r] = x[r, target[r]] -
// logsumexp(x[r, :]) over the whole vocabulary, whose logits come in column blocks (one output head
// block each, a dispatch per block, in order) for a chunk of rows (row r of the logits is row
// row_offset + r of targets, running and log_probs). One workgroup per row. Between a row's blocks
// the running max, the sum of exp(x - max) and the target's logit wait in running[r] (f32); the
// last block writes the result (NaN where target >= vocab: a row with no next token). Accumulation
// in f32 whatever the storage.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { sfloat logits[]; };
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) buffer Running { float running[]; };
layout(std430, binding = 3) writeonly buffer LogProbs { float log_probs[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { TokenLogProbPush p; };

#include "rill_reduce.glsl"
#include "row_softmax.glsl"

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform per workgroup
  const uint base = row * p.count;
  float m, sum;
  rill_row_softmax_stats(base, p.count, m, sum);
  if (gl_LocalInvocationID.x != 0) return;
  const uint out_row = p.row_offset + row, t = targets[out_row], at = out_row * kLogProbRunningWords;
  float target_logit = 0.0;
  if ((p.flags & kLogProbFirstBlock) == 0u) {  // fold in the blocks before this one
    const float before_max = running[at], before_sum = running[at + 1];
    const float both = max(before_max, m);
    sum = before_sum * exp(before_max - both) + sum * exp(m - both);
    m = both;
    target_logit = running[at + 2];
  }
  if (t >= p.first && t - p.first < p.count) target_logit = float(logits[base + (t - p.first)]);
  if ((p.flags & kLogProbLastBlock) != 0u) {
    // (x - m) first: m + log(sum) would round at m's magnitude (an ulp of 1e-3 at 1e4).
    log_probs[out_row] = t < p.vocab ? (target_logit - m) - log(sum) : uintBitsToFloat(0x7fc00000u);
  } else {
    running[at] = m;
    running[at + 1] = sum;
    running[at + 2] = target_logit;
  }
}
