// Forward of one layer with a workgroup per task (GPUs): the task's tokens and matrices in shared
// memory, every matrix product spread over the invocations, one output element each. The same
// arithmetic in the same order as icl_layer_fwd.glsl (one task per invocation, for CPU drivers).
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) buffer Acts { float acts[]; };
layout(std430, binding = 2) writeonly buffer Mats { float mats[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLayerPush p; };

RILL_ICL_PARAM_ACCESSORS(params)

shared float s_x[TOKEN_ELEMS];
shared float s_a[MAT];  // A = sum over the context tokens of e_j e_j^T
shared float s_b[MAT];  // B = s sum_h P_h A Q_h
shared float s_c[MAT];  // A Q_h (FULL)

void main() {
  const uint t = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;  // the task
  if (t >= p.batch || t % p.model_stride >= p.model_tasks) return;  // uniform over the workgroup
  const uint lane = gl_LocalInvocationIndex;
  g_model_params = (t / p.model_stride) * p.model_params;
  const uint in_base = p.layer * TOKEN_ELEMS * p.batch + t;
  const uint out_base = in_base + TOKEN_ELEMS * p.batch;
  const uint mats_base = p.layer * 2u * MAT * p.batch + t;

  for (uint e = lane; e < TOKEN_ELEMS; e += WG_SIZE) s_x[e] = acts[in_base + e * p.batch];
  barrier();
  for (uint e = lane; e < MAT; e += WG_SIZE) {
    const uint a = e / D1, b = e % D1;
    float sum = 0.0;
    for (uint j = 0u; j < NCTX; ++j) sum += s_x[j * D1 + min(a, b)] * s_x[j * D1 + max(a, b)];
    s_a[e] = sum;
    s_b[e] = 0.0;
  }
  barrier();
  for (uint h = 0u; h < HEADS; ++h) {
    const uint base = (p.layer * HEADS + h) * BLOCK;
    if (PARAM == 0u) {
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        float sum = 0.0;
        for (uint c = 0u; c < D1; ++c) sum += s_a[a * D1 + c] * param_q(base, c, b);
        s_c[e] = sum;
      }
      barrier();
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        float sum = 0.0;
        for (uint c = 0u; c < D1; ++c) sum += param_p(base, a, c) * s_c[c * D1 + b];
        s_b[e] += p.scale * sum;
      }
      barrier();  // s_c is rewritten by the next head
    } else {
      // Each invocation owns its entries of B across heads: no barrier between them.
      for (uint e = lane; e < MAT; e += WG_SIZE) {
        const uint a = e / D1, b = e % D1;
        s_b[e] += p.scale * diag_p(base, a) * s_a[e] * diag_q(base, b);
      }
    }
  }
  barrier();
  for (uint e = lane; e < MAT; e += WG_SIZE) {
    mats[mats_base + e * p.batch] = s_a[e];
    mats[mats_base + (MAT + e) * p.batch] = s_b[e];
  }
  for (uint e = lane; e < TOKEN_ELEMS; e += WG_SIZE) {
    const uint i = e / D1, a = e % D1;
    float sum = s_x[e];
    for (uint b = 0u; b < D1; ++b) sum += s_b[a * D1 + b] * s_x[i * D1 + b];
    acts[out_base + e * p.batch] = sum;
  }
}
