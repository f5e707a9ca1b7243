// Backward of one layer for every task of the batch. With X the layer's input tokens, A and B as
// saved by the forward, G = dLoss/d(output tokens):
//   dB = sum_i G_i X_i^T;  dX_i = G_i + B^T G_i;
//   per head: dP_h = s dB Q_h^T A,  dQ_h = s A P_h^T dB,  dA += s P_h^T dB Q_h^T;
//   context tokens j < n also get dX_j += (dA + dA^T) X_j.
// Each task's parameter gradients go to partials[param][batch]; icl_grad_reduce sums them over
// the batch in a fixed order (deterministic).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) readonly buffer Acts { float acts[]; };
layout(std430, binding = 2) readonly buffer Mats { float mats[]; };
layout(std430, binding = 3) readonly buffer GradOut { float g_out[]; };  // dLoss/d(layer output)
layout(std430, binding = 4) writeonly buffer GradIn { float g_in[]; };   // dLoss/d(layer input)
layout(std430, binding = 5) writeonly buffer Partials { float partials[]; };
layout(std430, binding = 6) buffer Work { float work[]; };  // dB, T, dA: [3][MAT][batch]
layout(push_constant) uniform Push {
  uint batch;
  uint layer;
  float scale;
  uint input_grad;  // 0 for the first layer: the data needs no gradient
} p;

RILL_ICL_PARAM_ACCESSORS(params)

uint g_t;
uint x_at(uint i, uint k) { return ((p.layer * TOKEN_ELEMS) + i * D1 + k) * p.batch + g_t; }
uint g_at(uint i, uint k) { return (i * D1 + k) * p.batch + g_t; }
uint a_at(uint a, uint b) { return ((p.layer * 2u) * MAT + a * D1 + b) * p.batch + g_t; }
uint b_at(uint a, uint b) { return ((p.layer * 2u + 1u) * MAT + a * D1 + b) * p.batch + g_t; }
uint db_at(uint a, uint b) { return (a * D1 + b) * p.batch + g_t; }
uint t_at(uint a, uint b) { return (MAT + a * D1 + b) * p.batch + g_t; }
uint da_at(uint a, uint b) { return (2u * MAT + a * D1 + b) * p.batch + g_t; }
void put_partial(uint param, float value) { partials[param * p.batch + g_t] = value; }

void main() {
  g_t = rill_global_index();
  if (g_t >= p.batch) return;

  for (uint a = 0u; a < D1; ++a) {
    for (uint b = 0u; b < D1; ++b) {
      float sum = 0.0;
      for (uint i = 0u; i < TOKENS; ++i) sum += g_out[g_at(i, a)] * acts[x_at(i, b)];
      work[db_at(a, b)] = sum;
      work[da_at(a, b)] = 0.0;
    }
  }

  for (uint h = 0u; h < HEADS; ++h) {
    const uint base = (p.layer * HEADS + h) * BLOCK;
    if (PARAM == 0u) {
      // T = dB Q^T, then dP = s T A.
      for (uint a = 0u; a < D1; ++a) {
        for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          for (uint c = 0u; c < D1; ++c) sum += work[db_at(a, c)] * param_q(base, b, c);
          work[t_at(a, b)] = sum;
        }
      }
      for (uint a = 0u; a < D1; ++a) {
        for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          for (uint c = 0u; c < D1; ++c) sum += work[t_at(a, c)] * mats[a_at(c, b)];
          put_partial(base + a * D1 + b, p.scale * sum);
        }
      }
      // T = P^T dB, then dQ = s A T and dA += s T Q^T.
      for (uint a = 0u; a < D1; ++a) {
        for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          for (uint c = 0u; c < D1; ++c) sum += param_p(base, c, a) * work[db_at(c, b)];
          work[t_at(a, b)] = sum;
        }
      }
      for (uint a = 0u; a < D1; ++a) {
        for (uint b = 0u; b < D1; ++b) {
          float dq = 0.0;
          float da = 0.0;
          for (uint c = 0u; c < D1; ++c) {
            dq += mats[a_at(a, c)] * work[t_at(c, b)];
            da += work[t_at(a, c)] * param_q(base, b, c);
          }
          put_partial(base + MAT + a * D1 + b, p.scale * dq);
          work[da_at(a, b)] += p.scale * da;
        }
      }
    } else {
      // Diagonal P and Q: only the diagonals of dP and dQ matter, and dA_ab += s p_a dB_ab q_b.
      float dpx = 0.0, dpy = 0.0, dqx = 0.0, dqy = 0.0;
      for (uint a = 0u; a < D1; ++a) {
        float dp = 0.0;
        float dq = 0.0;
        for (uint c = 0u; c < D1; ++c) {
          dp += work[db_at(a, c)] * diag_q(base, c) * mats[a_at(c, a)];
          dq += mats[a_at(a, c)] * diag_p(base, c) * work[db_at(c, a)];
        }
        if (a + 1u == D1) {
          dpy = dp;
          dqy = dq;
        } else {
          dpx += dp;
          dqx += dq;
        }
        const float pa = diag_p(base, a);
        for (uint b = 0u; b < D1; ++b) work[da_at(a, b)] += p.scale * pa * work[db_at(a, b)] * diag_q(base, b);
      }
      put_partial(base + 0u, p.scale * dpx);
      put_partial(base + 1u, p.scale * dpy);
      put_partial(base + 2u, p.scale * dqx);
      if (PARAM == 1u) put_partial(base + 3u, p.scale * dqy);
    }
  }

  if (p.input_grad == 0u) return;
  for (uint i = 0u; i < TOKENS; ++i) {
    for (uint a = 0u; a < D1; ++a) {
      float sum = g_out[g_at(i, a)];
      for (uint b = 0u; b < D1; ++b) sum += mats[b_at(b, a)] * g_out[g_at(i, b)];
      if (i < NCTX) {
        for (uint b = 0u; b < D1; ++b) sum += (work[da_at(a, b)] + work[da_at(b, a)]) * acts[x_at(i, b)];
      }
      g_in[g_at(i, a)] = sum;
    }
  }
}
