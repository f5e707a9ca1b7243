// Forward of LAYERS layers from p.layer for every task of the batch, one task per
// invocation; per layer: A = sum_{j<n} e_j e_j^T over the context tokens, B = s * sum_h P_h A Q_h,
// e_i <- e_i + B e_i for all tokens (query included). Every layer's output tokens and (p.save_mats)
// its A and B are kept (acts, mats) for the backward pass; the tokens stay in the private array between layers.
// The model's top layer (query: QUERY_TOP in icl_model.glsl) computes only what the loss reads, B's
// last row and the query's label slot; its other outputs and B's other rows are left unwritten.
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) buffer Acts { float acts[]; };
layout(std430, binding = 2) writeonly buffer Mats { float mats[]; };
// RILL_ICL_TEXELS (the `_tx` kernels, CPU drivers): the dispatch's input tokens read through a
// 4-element texel view of acts (as in icl_layer_bwd.glsl); it writes only the layers above them.
// On lavapipe a storage-buffer load loops over the SIMD lanes, where a texel fetch gathers them: the
// forward ran 1.2-1.3x faster at the Vladymyrov setting (.ci/timing/icl-forward-texels.txt).
#ifdef RILL_ICL_TEXELS
layout(binding = 3) uniform samplerBuffer acts_in;
#define ICL_INPUT_READ(i) texelFetch(acts_in, int((i) >> 2u))[(i) & 3u]
#else
#define ICL_INPUT_READ(i) acts[i]
#endif
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLayerPush p; };

RILL_ICL_PARAM_ACCESSORS(params)
#include "icl_task_slot.glsl"

// Layer `layer` of task slot t from x, its input tokens; with carry, x becomes its output.
void forward_layer(uint t, uint layer, bool carry, const bool query, inout float x[TOKEN_ELEMS]) {
  const uint out_base = (layer + 1u) * TOKEN_ELEMS * p.batch + t;
  const uint mats_base = layer * 2u * MAT * p.batch + t;

  // A is symmetric: the upper triangle, mirrored.
  float a_mat[MAT];
  UNROLL for (uint a = 0u; a < D1; ++a) {
    UNROLL for (uint b = a; b < D1; ++b) {
      float sum = 0.0;
      UNROLL for (uint j = 0u; j < NCTX; ++j) sum += x[j * D1 + a] * x[j * D1 + b];
      a_mat[a * D1 + b] = sum;
      a_mat[b * D1 + a] = sum;
    }
  }

  float b_mat[MAT];
  UNROLL for (uint e = 0u; e < MAT; ++e) b_mat[e] = 0.0;
  UNROLL for (uint h = 0u; h < HEADS; ++h) {
    const uint base = (layer * HEADS + h) * BLOCK;
    if (PARAM == 0u) {
      float c_mat[MAT];  // A Q
      UNROLL for (uint a = 0u; a < D1; ++a) {
        UNROLL for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          UNROLL for (uint c = 0u; c < D1; ++c) sum += a_mat[a * D1 + c] * param_q(base, c, b);
          c_mat[a * D1 + b] = sum;
        }
      }
      UNROLL for (uint a = 0u; a < D1; ++a) {
        if (query && a + 1u != D1) continue;
        UNROLL for (uint b = 0u; b < D1; ++b) {
          float sum = 0.0;
          UNROLL for (uint c = 0u; c < D1; ++c) sum += param_p(base, a, c) * c_mat[c * D1 + b];
          b_mat[a * D1 + b] += p.scale * sum;
        }
      }
    } else {
      // Diagonal P and Q: B_ab = s p_a A_ab q_b.
      UNROLL for (uint a = 0u; a < D1; ++a) {
        if (query && a + 1u != D1) continue;
        const float pa = p.scale * diag_p(base, a);
        UNROLL for (uint b = 0u; b < D1; ++b) b_mat[a * D1 + b] += pa * a_mat[a * D1 + b] * diag_q(base, b);
      }
    }
  }

  if (p.save_mats != 0u) {
    // At the top layer only B's last row, the one row the backward reads (icl_layer_bwd.glsl): the
    // zeros of the others were stores for nothing (each one a loop over the SIMD lanes on lavapipe).
    UNROLL for (uint e = 0u; e < MAT; ++e) {
      mats[mats_base + e * p.batch] = a_mat[e];
      if (!query || e >= (D1 - 1u) * D1) mats[mats_base + (MAT + e) * p.batch] = b_mat[e];
    }
  }
  // A token's output reads only that token: a token at a time, through a row of D1, into x when
  // another layer follows in this dispatch.
  UNROLL for (uint i = 0u; i < TOKENS; ++i) {
    float y[D1];
    UNROLL for (uint a = 0u; a < D1; ++a) {
      float sum = x[i * D1 + a];
      if (!query || (i == NCTX && a + 1u == D1)) {
        UNROLL for (uint b = 0u; b < D1; ++b) sum += b_mat[a * D1 + b] * x[i * D1 + b];
        acts[out_base + (i * D1 + a) * p.batch] = sum;
      }
      y[a] = sum;
    }
    if (carry) {
      UNROLL for (uint a = 0u; a < D1; ++a) x[i * D1 + a] = y[a];
    }
  }
}

void main() {
  uint t;
  if (!icl_task_slot(t)) return;
  float x[TOKEN_ELEMS];
  UNROLL for (uint e = 0u; e < TOKEN_ELEMS; ++e) x[e] = ICL_INPUT_READ(p.layer * TOKEN_ELEMS * p.batch + t + e * p.batch);
  // One layer compiles with no loop around it; lavapipe ran a single-layer dispatch of the looped
  // form 1.4-4x slower per layer.
  if (LAYERS == 1u) {
    forward_layer(t, p.layer, false, QUERY_TOP, x);
  } else {
    // The top layer, when the dispatch holds it, is its last: peeled off the loop.
    const uint whole = QUERY_TOP ? LAYERS - 1u : LAYERS;
    [[dont_unroll]] for (uint l = 0u; l < whole; ++l) forward_layer(t, p.layer + l, l + 1u < LAYERS, false, x);
    if (QUERY_TOP) forward_layer(t, p.layer + LAYERS - 1u, false, true, x);
  }
}
