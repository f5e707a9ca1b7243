// Forward of one layer for every task of the batch: A = sum_{j<n} e_j e_j^T over the context
// tokens, B = s * sum_h P_h A Q_h, e_i <- e_i + B e_i for all tokens (query included).
// A and B are kept (mats) for the backward pass.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) buffer Acts { float acts[]; };
layout(std430, binding = 2) buffer Mats { float mats[]; };
layout(std430, binding = 3) buffer Work { float work[]; };  // C = A Q_h, [MAT][batch]
layout(push_constant) uniform Push {
  uint batch;
  uint layer;
  float scale;  // s: 1/n (Ahn et al.) or 1 (Vladymyrov et al.)
  uint unused;  // the backward's input_grad: both layer kernels share one push layout
} p;

RILL_ICL_PARAM_ACCESSORS(params)

uint g_t;
uint x_at(uint i, uint k) { return ((p.layer * TOKEN_ELEMS) + i * D1 + k) * p.batch + g_t; }
uint y_at(uint i, uint k) { return (((p.layer + 1u) * TOKEN_ELEMS) + i * D1 + k) * p.batch + g_t; }
uint a_at(uint a, uint b) { return ((p.layer * 2u) * MAT + a * D1 + b) * p.batch + g_t; }
uint b_at(uint a, uint b) { return ((p.layer * 2u + 1u) * MAT + a * D1 + b) * p.batch + g_t; }
uint c_at(uint a, uint b) { return (a * D1 + b) * p.batch + g_t; }

void main() {
  g_t = rill_global_index();
  if (g_t >= p.batch) return;

  // A is symmetric: the upper triangle, mirrored.
  for (uint a = 0u; a < D1; ++a) {
    for (uint b = a; b < D1; ++b) {
      float sum = 0.0;
      for (uint j = 0u; j < NCTX; ++j) sum += acts[x_at(j, a)] * acts[x_at(j, b)];
      mats[a_at(a, b)] = sum;
      mats[a_at(b, a)] = sum;
    }
  }

  for (uint h = 0u; h < HEADS; ++h) {
    const uint base = (p.layer * HEADS + h) * BLOCK;
    if (PARAM == 0u) {
      for (uint a = 0u; a < D1; ++a) {
        for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          for (uint c = 0u; c < D1; ++c) sum += mats[a_at(a, c)] * param_q(base, c, b);
          work[c_at(a, b)] = sum;
        }
      }
      for (uint a = 0u; a < D1; ++a) {
        for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          for (uint c = 0u; c < D1; ++c) sum += param_p(base, a, c) * work[c_at(c, b)];
          const float prev = h == 0u ? 0.0 : mats[b_at(a, b)];
          mats[b_at(a, b)] = prev + p.scale * sum;
        }
      }
    } else {
      // Diagonal P and Q: B_ab = s p_a A_ab q_b.
      for (uint a = 0u; a < D1; ++a) {
        const float pa = diag_p(base, a);
        for (uint b = 0u; b < D1; ++b) {
          const float prev = h == 0u ? 0.0 : mats[b_at(a, b)];
          mats[b_at(a, b)] = prev + p.scale * pa * mats[a_at(a, b)] * diag_q(base, b);
        }
      }
    }
  }

  for (uint i = 0u; i < TOKENS; ++i) {
    for (uint a = 0u; a < D1; ++a) {
      float sum = acts[x_at(i, a)];
      for (uint b = 0u; b < D1; ++b) sum += mats[b_at(a, b)] * acts[x_at(i, b)];
      acts[y_at(i, a)] = sum;
    }
  }
}
