// Backward of one layer with a workgroup per task (GPUs): the task's tokens, gradient and
// matrices in shared memory, every product spread over the invocations. The same arithmetic in
// the same order as icl_layer_bwd.glsl (one task per invocation, for CPU drivers), which has the
// formulas.
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) readonly buffer Acts { float acts[]; };
layout(std430, binding = 2) readonly buffer Mats { float mats[]; };
layout(std430, binding = 3) readonly buffer GradOut { float g_out[]; };  // dLoss/d(layer output)
layout(std430, binding = 4) writeonly buffer GradIn { float g_in[]; };   // dLoss/d(layer input)
layout(std430, binding = 5) writeonly buffer Partials { float partials[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLayerPush p; };

RILL_ICL_PARAM_ACCESSORS(params)

shared float s_x[TOKEN_ELEMS];
shared float s_g[TOKEN_ELEMS];
shared float s_a[MAT];
shared float s_db[MAT];
shared float s_da[MAT];
shared float s_tmp[MAT];
shared float s_dp[D1];  // DIAG and GD++: per-coordinate terms, summed in order by one invocation
shared float s_dq[D1];

void main() {
  const uint t = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;  // the task
  if (t >= p.batch || t % p.model_stride >= p.model_tasks) return;  // uniform over the workgroup
  const uint lane = gl_LocalInvocationIndex;
  g_model_params = (t / p.model_stride) * p.model_params;
  const uint x_base = p.layer * TOKEN_ELEMS * p.batch + t;
  const uint mats_base = p.layer * 2u * MAT * p.batch + t;

  for (uint e = lane; e < TOKEN_ELEMS; e += WG_SIZE) {
    s_x[e] = acts[x_base + e * p.batch];
    s_g[e] = g_out[e * p.batch + t];
  }
  for (uint e = lane; e < MAT; e += WG_SIZE) s_a[e] = mats[mats_base + e * p.batch];
  barrier();
  for (uint e = lane; e < MAT; e += WG_SIZE) {
    const uint a = e / D1, b = e % D1;
    float sum = 0.0;
    for (uint i = 0u; i < TOKENS; ++i) sum += s_g[i * D1 + a] * s_x[i * D1 + b];
    s_db[e] = sum;
    s_da[e] = 0.0;
  }
  barrier();

  for (uint h = 0u; h < HEADS; ++h) {
    const uint base = (p.layer * HEADS + h) * BLOCK;
    if (PARAM == 0u) {
      // tmp = dB Q^T, then dP = s tmp A.
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        float sum = 0.0;
        for (uint c = 0u; c < D1; ++c) sum += s_db[a * D1 + c] * param_q(base, b, c);
        s_tmp[e] = sum;
      }
      barrier();
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        float sum = 0.0;
        for (uint c = 0u; c < D1; ++c) sum += s_tmp[a * D1 + c] * s_a[c * D1 + b];
        partials[(base + e) * p.batch + t] = p.scale * sum;
      }
      barrier();
      // tmp = P^T dB, then dQ = s A tmp and dA += s tmp Q^T.
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        float sum = 0.0;
        for (uint c = 0u; c < D1; ++c) sum += param_p(base, c, a) * s_db[c * D1 + b];
        s_tmp[e] = sum;
      }
      barrier();
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        float dq = 0.0;
        float dav = 0.0;
        for (uint c = 0u; c < D1; ++c) {
          dq += s_a[a * D1 + c] * s_tmp[c * D1 + b];
          dav += s_tmp[a * D1 + c] * param_q(base, b, c);
        }
        partials[(base + MAT + e) * p.batch + t] = p.scale * dq;
        s_da[e] += p.scale * dav;
      }
      barrier();  // s_tmp is rewritten by the next head
    } else {
      for (uint a = lane; a < D1; a += WG_SIZE) {
        float dp = 0.0;
        float dq = 0.0;
        for (uint c = 0u; c < D1; ++c) {
          dp += s_db[a * D1 + c] * diag_q(base, c) * s_a[c * D1 + a];
          dq += s_a[a * D1 + c] * diag_p(base, c) * s_db[c * D1 + a];
        }
        s_dp[a] = dp;
        s_dq[a] = dq;
      }
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        s_da[e] += p.scale * diag_p(base, a) * s_db[e] * diag_q(base, b);
      }
      barrier();
      if (lane == 0u) {
        float dpx = 0.0, dqx = 0.0;
        for (uint a = 0u; a + 1u < D1; ++a) {
          dpx += s_dp[a];
          dqx += s_dq[a];
        }
        partials[(base + 0u) * p.batch + t] = p.scale * dpx;
        partials[(base + 1u) * p.batch + t] = p.scale * s_dp[D1 - 1u];
        partials[(base + 2u) * p.batch + t] = p.scale * dqx;
        if (PARAM == 1u) partials[(base + 3u) * p.batch + t] = p.scale * s_dq[D1 - 1u];
      }
      barrier();  // s_dp and s_dq are rewritten by the next head
    }
  }

  if (p.input_grad == 0u) return;  // uniform
  for (uint e = lane; e < MAT; e += WG_SIZE) s_tmp[e] = mats[mats_base + (MAT + e) * p.batch];  // B
  barrier();
  for (uint e = lane; e < TOKEN_ELEMS; e += WG_SIZE) {
    const uint i = e / D1, a = e % D1;
    float sum = s_g[e];
    for (uint b = 0u; b < D1; ++b) sum += s_tmp[b * D1 + a] * s_g[i * D1 + b];
    if (i < NCTX) {
      for (uint b = 0u; b < D1; ++b) sum += (s_da[a * D1 + b] + s_da[b * D1 + a]) * s_x[i * D1 + b];
    }
    g_in[e * p.batch + t] = sum;
  }
}
