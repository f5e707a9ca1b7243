// Backward of LAYERS layers, from p.layer down, for every task of the batch, one task per
// invocation; the gradient G stays in the private array from layer to layer. Per layer, with X
// its input tokens, A and B as saved by the forward, G = dLoss/d(its output tokens):
//   dB = sum_i G_i X_i^T;  dX_i = G_i + B^T G_i;
//   per head: dP_h = s dB Q_h^T A,  dQ_h = s A P_h^T dB,  dA += s P_h^T dB Q_h^T;
//   context tokens j < n also get dX_j += (dA + dA^T) X_j.
// Each task's parameter gradients go to partials[param][batch]; icl_grad_reduce sums them over
// the batch in a fixed order (deterministic).
// At the model's top layer (query) G is the loss's seed, zero but at the query's label slot, and
// the forward left only B's last row: the products skip the seed's zeros (dB and P^T dB keep one
// term, dB Q^T and dP one row, dX_i's B^T G_i one token), the same sums less their zero terms.
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
// RILL_ICL_TEXELS (the `_tx` kernels, CPU drivers): the layers' tokens, A and B and the output
// gradient read through 4-element texel views (vk/texel_views.hpp), each read the component of its
// task's element. On lavapipe a storage-buffer load loops over the SIMD lanes, where a texel fetch
// gathers them: the backward ran about 15 % faster at the Vladymyrov setting.
#ifdef RILL_ICL_TEXELS
layout(binding = 1) uniform samplerBuffer acts;
layout(binding = 2) uniform samplerBuffer mats;
layout(binding = 3) uniform samplerBuffer g_out;  // dLoss/d(layer output)
#define ICL_READ(buffer, i) texelFetch(buffer, int((i) >> 2u))[(i) & 3u]
#else
layout(std430, binding = 1) readonly buffer Acts { float acts[]; };
layout(std430, binding = 2) readonly buffer Mats { float mats[]; };
layout(std430, binding = 3) readonly buffer GradOut { float g_out[]; };  // dLoss/d(layer output)
#define ICL_READ(buffer, i) buffer[i]
#endif
#define ICL_ACTS_AT(i) ICL_READ(acts, i)
layout(std430, binding = 4) writeonly buffer GradIn { float g_in[]; };   // dLoss/d(layer input)
layout(std430, binding = 5) writeonly buffer Partials { float partials[]; };
// LOSS_SEED: the targets in, each task's loss and prediction out (icl_loss_terms.glsl).
layout(std430, binding = 6) readonly buffer Targets { float targets[]; };
layout(std430, binding = 7) writeonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 8) writeonly buffer Preds { float preds[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLayerPush p; };
#include "icl_loss_terms.glsl"

RILL_ICL_PARAM_ACCESSORS(params)
#include "icl_task_slot.glsl"

// Layer `layer` of task slot t: g (the gradient of its output) becomes the gradient of its input
// when input_grad, and its parameter gradients go to partials.
void backward_layer(uint t, uint layer, bool input_grad, const bool query, inout float g[TOKEN_ELEMS]) {
  const uint x_base = layer * TOKEN_ELEMS * p.batch + t;
  const uint mats_base = layer * 2u * MAT * p.batch + t;
  float x[TOKEN_ELEMS];
  UNROLL for (uint e = 0u; e < TOKEN_ELEMS; ++e) x[e] = ICL_READ(acts, x_base + e * p.batch);
  float a_mat[MAT];
  UNROLL for (uint e = 0u; e < MAT; ++e) a_mat[e] = ICL_READ(mats, mats_base + e * p.batch);
  float db[MAT];
  float da[MAT];
  UNROLL for (uint a = 0u; a < D1; ++a) {
    UNROLL for (uint b = 0u; b < D1; ++b) {
      float sum = 0.0;
      UNROLL for (uint i = 0u; i < TOKENS; ++i)
        if (!query || (i == NCTX && a + 1u == D1)) sum += g[i * D1 + a] * x[i * D1 + b];
      db[a * D1 + b] = sum;
      da[a * D1 + b] = 0.0;
    }
  }

  UNROLL for (uint h = 0u; h < HEADS; ++h) {
    const uint base = (layer * HEADS + h) * BLOCK;
    if (PARAM == 0u) {
      float tmp[MAT];
      float dpq[2u * MAT];  // dP then dQ, stored STAGED
      float pq[2u * MAT];   // P then Q, loaded STAGED
      STAGED for (uint e = 0u; e < 2u * MAT; ++e) pq[e] = params[g_model_params + base + e];
      // tmp = dB Q^T, then dP = s tmp A (with query, dB's rows and so these are zero but the last).
      UNROLL for (uint a = 0u; a < D1; ++a) {
        UNROLL for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          if (!query || a + 1u == D1)
            UNROLL for (uint c = 0u; c < D1; ++c) sum += db[a * D1 + c] * pq[MAT + b * D1 + c];
          tmp[a * D1 + b] = sum;
        }
      }
      UNROLL for (uint a = 0u; a < D1; ++a) {
        UNROLL for (uint b = 0u; b < D1; ++b) {
          if (query && a + 1u != D1) {
            dpq[a * D1 + b] = 0.0;
            continue;
          }
          float sum = 0.0;
          UNROLL for (uint c = 0u; c < D1; ++c) sum += tmp[a * D1 + c] * a_mat[c * D1 + b];
          dpq[a * D1 + b] = p.scale * sum;
        }
      }
      // tmp = P^T dB, then dQ = s A tmp and dA += s tmp Q^T.
      UNROLL for (uint a = 0u; a < D1; ++a) {
        UNROLL for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          UNROLL for (uint c = 0u; c < D1; ++c)
            if (!query || c + 1u == D1) sum += pq[c * D1 + a] * db[c * D1 + b];
          tmp[a * D1 + b] = sum;
        }
      }
      UNROLL for (uint a = 0u; a < D1; ++a) {
        UNROLL for (uint b = 0u; b < D1; ++b) {
          float dq = 0.0;
          float dav = 0.0;
          UNROLL for (uint c = 0u; c < D1; ++c) {
            dq += a_mat[a * D1 + c] * tmp[c * D1 + b];
            dav += tmp[a * D1 + c] * pq[MAT + b * D1 + c];
          }
          dpq[MAT + a * D1 + b] = p.scale * dq;
          da[a * D1 + b] += p.scale * dav;
        }
      }
      STAGED for (uint e = 0u; e < 2u * MAT; ++e) partials[(base + e) * p.batch + t] = dpq[e];
    } else {
      // Diagonal P and Q: only the diagonals of dP and dQ matter, and dA_ab += s p_a dB_ab q_b.
      float dpx = 0.0, dpy = 0.0, dqx = 0.0, dqy = 0.0;
      UNROLL for (uint a = 0u; a < D1; ++a) {
        float dp = 0.0;
        float dq = 0.0;
        UNROLL for (uint c = 0u; c < D1; ++c) {
          dp += db[a * D1 + c] * diag_q(base, c) * a_mat[c * D1 + a];
          dq += a_mat[a * D1 + c] * diag_p(base, c) * db[c * D1 + a];
        }
        if (a + 1u == D1) {
          dpy = dp;
          dqy = dq;
        } else {
          dpx += dp;
          dqx += dq;
        }
        const float pa = p.scale * diag_p(base, a);
        UNROLL for (uint b = 0u; b < D1; ++b) da[a * D1 + b] += pa * db[a * D1 + b] * diag_q(base, b);
      }
      partials[(base + 0u) * p.batch + t] = p.scale * dpx;
      partials[(base + 1u) * p.batch + t] = p.scale * dpy;
      partials[(base + 2u) * p.batch + t] = p.scale * dqx;
      if (PARAM == 1u) partials[(base + 3u) * p.batch + t] = p.scale * dqy;
    }
  }

  // The gradient of the layer's input: the next layer's output gradient, or the dispatch's result.
  if (!input_grad) return;
  float b_mat[MAT];
  UNROLL for (uint e = 0u; e < MAT; ++e)
    b_mat[e] = !query || e >= (D1 - 1u) * D1 ? ICL_READ(mats, mats_base + (MAT + e) * p.batch) : 0.0;
  // A token's input gradient reads only that token's: a token at a time, through a row of D1.
  UNROLL for (uint i = 0u; i < TOKENS; ++i) {
    float gn[D1];
    UNROLL for (uint a = 0u; a < D1; ++a) {
      float sum = g[i * D1 + a];
      UNROLL for (uint b = 0u; b < D1; ++b)
        if (!query || (i == NCTX && b + 1u == D1)) sum += b_mat[b * D1 + a] * g[i * D1 + b];
      if (i < NCTX) {
        UNROLL for (uint b = 0u; b < D1; ++b) sum += (da[a * D1 + b] + da[b * D1 + a]) * x[i * D1 + b];
      }
      gn[a] = sum;
    }
    UNROLL for (uint a = 0u; a < D1; ++a) g[i * D1 + a] = gn[a];
  }
}

void main() {
  uint t;
  if (!icl_task_slot(t)) return;
  float g[TOKEN_ELEMS];
  if (LOSS_SEED) {  // the loss's gradient: zero but at the query's label slot
    UNROLL for (uint e = 0u; e < TOKEN_ELEMS; ++e) g[e] = 0.0;
    g[QUERY_LABEL] = icl_task_loss(t, p.layer + 1u, p.loss_factor, p.model_tasks);
  } else {
    UNROLL for (uint e = 0u; e < TOKEN_ELEMS; ++e) g[e] = ICL_READ(g_out, e * p.batch + t);
  }
  // One layer compiles with no loop around it (icl_layer_fwd.glsl says why).
  if (LAYERS == 1u) {
    backward_layer(t, p.layer, p.input_grad != 0u, QUERY_TOP, g);
  } else {
    // The top layer, when the dispatch holds it, is its first: peeled off the loop (more follow).
    if (QUERY_TOP) backward_layer(t, p.layer, true, true, g);
    [[dont_unroll]] for (uint l = QUERY_TOP ? 1u : 0u; l < LAYERS; ++l)
      backward_layer(t, p.layer - l, l + 1u < LAYERS || p.input_grad != 0u, false, g);
  }
  if (p.input_grad == 0u) return;
  float staged[TOKEN_ELEMS];
  UNROLL for (uint e = 0u; e < TOKEN_ELEMS; ++e) staged[e] = g[e];
  STAGED for (uint e = 0u; e < TOKEN_ELEMS; ++e) g_in[e * p.batch + t] = staged[e];
}
