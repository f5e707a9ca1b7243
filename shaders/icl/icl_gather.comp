// Fills a training batch from a task set in device memory (bring-your-own data) instead of the
// sampler: slot t of the batch gets task (cursor + t) mod tasks, where the cursor is the
// set-cursor word of the trainer's state, advanced by icl_optimize after every step, so a
// replayed step walks the set.
// Source layout is the file's (task-major: [task][token][feature]); the batch is element-major,
// task-minor like every other per-task buffer.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer State { uint state[]; };
layout(std430, binding = 1) readonly buffer SetTokens { float set_tokens[]; };
layout(std430, binding = 2) readonly buffer SetTargets { float set_targets[]; };
layout(std430, binding = 3) readonly buffer SetSigmas { float set_sigmas[]; };
layout(std430, binding = 4) writeonly buffer Tokens { float tokens[]; };
layout(std430, binding = 5) writeonly buffer Targets { float targets[]; };
layout(std430, binding = 6) writeonly buffer Sigmas { float sigmas[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclGatherPush p; };

void main() {
  const uint t = rill_global_index();
  if (t >= p.batch) return;
  // cursor < tasks and t < batch, both below 2^24 (checked on the host): no overflow.
  const uint src = (state[kIclStateSetCursor] + t % p.tasks) % p.tasks;
  for (uint e = 0u; e < p.token_elems; ++e) tokens[e * p.batch + t] = set_tokens[src * p.token_elems + e];
  targets[t] = set_targets[src];
  sigmas[t] = set_sigmas[src];
}
