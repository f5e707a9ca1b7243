// Forward of LAYERS layers for TASKS tasks per workgroup (GPUs; icl_wg_common.glsl has the
// layout): each task's tokens stay in shared memory from layer to layer, every matrix product is
// spread over the task's LANES invocations, a BS x BS block of outputs each. The same arithmetic in the
// same order as icl_layer_fwd.glsl (one task per invocation, for CPU drivers), which also says
// what the top layer leaves out.
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) buffer Acts { float acts[]; };
layout(std430, binding = 2) writeonly buffer Mats { float mats[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLayerPush p; };

#include "icl_wg_common.glsl"

shared float s_x[TASKS * TOKEN_ELEMS];  // the layer's input tokens
shared float s_y[TASKS * TOKEN_ELEMS];  // its output tokens
shared float s_a[TASKS * MAT];          // A = sum over the context tokens of e_j e_j^T
shared float s_b[TASKS * MAT];          // B = s sum_h P_h A Q_h
shared float s_c[TASKS * MAT];          // A Q_h (FULL)

void main() {
  if (!icl_wg_begin()) return;  // uniform over the workgroup
  const uint task = gl_LocalInvocationIndex / LANES, lane = gl_LocalInvocationIndex % LANES;
  const uint x0 = task * TOKEN_ELEMS, m0 = task * MAT;  // this task's arrays

  ICL_WG_LOAD(s_x, acts, p.layer * TOKEN_ELEMS * p.batch, TOKEN_ELEMS)
  for (uint l = 0u; l < LAYERS; ++l) {
    const uint layer = p.layer + l;
    const bool query = QUERY_TOP && l + 1u == LAYERS;  // B's last row and the query's label slot only
    const uint b_row = query ? D1 - 1u : 0u, b_first = b_row * D1, y_first = query ? TOKEN_ELEMS - 1u : 0u;
    icl_stage_params(layer);
    barrier();  // tokens and parameters staged
    // A is symmetric: each entry (a, b) of the upper triangle is summed once (in the per-task
    // kernel's order) and written to both halves.
    ICL_BLOCKS(true, D1, 0u, 0u, 0.0,
               ICL_ACCUMULATE(true, 0u, NCTX, s_x[x0 + k_ * D1 + r_], s_x[x0 + k_ * D1 + c_]),
               s_a[m0 + r_ * D1 + c_] = v_;
               s_a[m0 + c_ * D1 + r_] = v_)
    for (uint e = lane; e < MAT; e += LANES) s_b[m0 + e] = 0.0;
    barrier();
    for (uint h = 0u; h < HEADS; ++h) {
      const uint base = h * BLOCK;
      if (PARAM == 0u) {
        ICL_BLOCKS(false, D1, 0u, 0u, 0.0, ICL_ACCUMULATE(true, 0u, D1, s_a[m0 + r_ * D1 + k_], param_q(base, k_, c_)),
                   s_c[m0 + r_ * D1 + c_] = v_)
        barrier();
        ICL_BLOCKS(false, D1, b_row, 0u, 0.0, ICL_ACCUMULATE(true, 0u, D1, param_p(base, r_, k_), s_c[m0 + k_ * D1 + c_]),
                   s_b[m0 + r_ * D1 + c_] += p.scale * v_)
        barrier();  // s_c is rewritten by the next head
      } else {
        // Each invocation owns its entries of B across heads: no barrier between them.
        for (uint e = b_first + lane; e < MAT; e += LANES) {
          const uint a = e / D1, b = e % D1;
          s_b[m0 + e] += p.scale * diag_p(base, a) * s_a[m0 + e] * diag_q(base, b);
        }
      }
    }
    barrier();  // B complete
    // y = x + B x per token (query: the query's label slot only).
    ICL_BLOCKS(false, TOKENS, query ? NCTX : 0u, query ? D1 - 1u : 0u, s_x[x0 + r_ * D1 + c_],
               ICL_ACCUMULATE(true, 0u, D1, s_x[x0 + r_ * D1 + k_], s_b[m0 + c_ * D1 + k_]),
               s_y[x0 + r_ * D1 + c_] = v_)
    barrier();  // outputs complete -> stored, and the next layer's input
    if (p.save_mats != 0u) {
      const uint mats_base = layer * 2u * MAT * p.batch;
      ICL_WG_STORE(mats, s_a, mats_base, MAT)
      ICL_WG_STORE(mats, s_b, mats_base + MAT * p.batch, MAT)
    }
    if (query) {  // only the label slot of each task's query was computed
      const uint k = gl_LocalInvocationIndex, t = g_first_slot + k;
      if (k < TASKS && icl_slot_active(t))
        acts[((layer + 1u) * TOKEN_ELEMS + y_first) * p.batch + t] = s_y[k * TOKEN_ELEMS + y_first];
    } else {
      ICL_WG_STORE(acts, s_y, (layer + 1u) * TOKEN_ELEMS * p.batch, TOKEN_ELEMS)
    }
    for (uint i = gl_LocalInvocationIndex; i < TASKS * TOKEN_ELEMS; i += WG_SIZE) s_x[i] = s_y[i];
    barrier();  // s_x, s_a and s_b read -> the next layer writes them
  }
}
