// Generates a batch of in-context regression tasks on the GPU (see rill_icl_sample.glsl for the
// task distribution): one invocation per task, or with PER_TOKEN one per (task, token), the token
// being the workgroup's z (GPUs: 21x the invocations and a twentieth of the serial work each). Layout is element-major, task-minor
// (tokens[e * batch + task]) so neighbouring invocations touch neighbouring addresses.
// The step comes from the model's state words (so a replayed training step draws a fresh batch)
// or, for evaluation batches, from the push constants; seed and noise from the model's entry.
// Built twice: icl_sample_rte.comp declares round-to-nearest-even, icl_sample.comp leaves the
// rounding to the driver (devices without shaderRoundingModeRTEFloat32).
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const bool PER_TOKEN = false;
layout(local_size_x_id = 0) in;

#include "contract/icl.glsl"
layout(std430, binding = 0) readonly buffer State { uint state[]; };
layout(std430, binding = 1) readonly buffer Models { IclModelEntry models[]; };
layout(std430, binding = 2) buffer Tokens { float tokens[]; };
layout(std430, binding = 3) writeonly buffer Targets { float targets[]; };
layout(std430, binding = 4) writeonly buffer Sigmas { float sigmas[]; };
layout(push_constant) uniform PushBlock { IclSamplePush p; };

uint g_task;
#define ICL_TOKEN(i, k) tokens[((i) * (p.d + 1u) + (k)) * p.batch + g_task]
#define ICL_TARGET targets[g_task]
#define ICL_SIGMA sigmas[g_task]
#include "rill_icl_sample.glsl"

void main() {
  g_task = rill_global_index();
  if (g_task >= p.batch) return;
  const uint model = g_task / p.model_stride;
  if (g_task % p.model_stride >= p.model_tasks) return;  // an idle slot
  const IclModelEntry m = models[model];
  IclSampler s;
  s.seed_lo = m.seed_lo;
  s.seed_hi = m.seed_hi;
  s.d = p.d;
  s.n = p.n;
  s.data_kind = p.data_kind;
  s.noise_kind = m.noise_kind;
  s.category_count = m.category_count;
  s.stream_base = p.stream_base;
  s.sigma_max = m.sigma_max;
  for (uint i = 0u; i < kIclMaxCategories; ++i) s.categories[i] = m.categories[i];
  s.gamma = RillGammaParams(p.gamma_shape, p.gamma_scale, p.gamma_inv_shape, p.gamma_mt_d, p.gamma_mt_c);
  const uint step = p.use_state_step != 0u ? state[model * kIclStateWords + kIclStateStep] : p.step;
  const uint task = p.first_task + g_task % p.model_stride;
  if (PER_TOKEN) {
    rill_icl_sample_token(s, task, step, gl_WorkGroupID.z);
  } else {
    rill_icl_sample_task(s, task, step);
  }
}
