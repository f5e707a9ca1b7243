// Backward of LAYERS layers, from p.layer down, for TASKS tasks per workgroup (GPUs;
// icl_wg_common.glsl has the layout): each task's gradient stays in shared memory from layer to
// layer, every product is spread over the task's LANES invocations. The same arithmetic in the
// same order as icl_layer_bwd.glsl (one task per invocation, for CPU drivers), which has the
// formulas and what the top layer leaves out.
#version 450
#extension GL_GOOGLE_include_directive : require
#define UNROLL
#include "icl_model.glsl"

layout(std430, binding = 0) readonly buffer Params { float params[]; };
layout(std430, binding = 1) readonly buffer Acts { float acts[]; };
layout(std430, binding = 2) readonly buffer Mats { float mats[]; };
layout(std430, binding = 3) readonly buffer GradOut { float g_out[]; };  // dLoss/d(top layer's output)
layout(std430, binding = 4) writeonly buffer GradIn { float g_in[]; };   // dLoss/d(bottom layer's input)
layout(std430, binding = 5) writeonly buffer Partials { float partials[]; };
// LOSS_SEED: the targets in, each task's loss and prediction out (icl_loss_terms.glsl).
layout(std430, binding = 6) readonly buffer Targets { float targets[]; };
layout(std430, binding = 7) writeonly buffer TaskLoss { float task_loss[]; };
layout(std430, binding = 8) writeonly buffer Preds { float preds[]; };
#include "contract/icl.glsl"
layout(push_constant) uniform PushBlock { IclLayerPush p; };
#include "icl_loss_terms.glsl"

#include "icl_wg_common.glsl"

const uint PARAMS = HEADS * BLOCK;  // per task and layer
shared float s_x[TASKS * TOKEN_ELEMS];
shared float s_g[TASKS * TOKEN_ELEMS];   // dLoss/d(the layer's output)
shared float s_gn[TASKS * TOKEN_ELEMS];  // dLoss/d(its input)
shared float s_a[TASKS * MAT];
shared float s_db[TASKS * MAT];  // dB, then dA + dA^T
shared float s_da[TASKS * MAT];
shared float s_tmp[TASKS * MAT];
shared float s_part[TASKS * PARAMS];  // the layer's parameter gradients, stored coalesced
shared float s_dp[TASKS * D1];        // DIAG and GD++: per-coordinate terms, summed in order by one invocation
shared float s_dq[TASKS * D1];

void main() {
  if (!icl_wg_begin()) return;  // uniform over the workgroup
  const uint task = gl_LocalInvocationIndex / LANES, lane = gl_LocalInvocationIndex % LANES;
  const uint x0 = task * TOKEN_ELEMS, m0 = task * MAT, d0 = task * D1, q0 = task * PARAMS;

  if (LOSS_SEED) {
    // The loss's gradient, zero but at the query's label slot, where the invocation that holds it
    // computes the task's loss (ICL_WG_LOAD's walk over the (element, task) pairs).
    const uint k = gl_LocalInvocationIndex % TASKS, t = g_first_slot + k;
    const bool on = icl_slot_active(t);
    for (uint e = gl_LocalInvocationIndex / TASKS; e < TOKEN_ELEMS; e += WG_SIZE / TASKS) {
      float seed = 0.0;
      if (on && e == QUERY_LABEL) seed = icl_task_loss(t, p.layer + 1u, p.loss_factor, p.model_tasks);
      s_g[k * TOKEN_ELEMS + e] = seed;
    }
  } else {
    ICL_WG_LOAD(s_g, g_out, 0u, TOKEN_ELEMS)
  }
  for (uint l = 0u; l < LAYERS; ++l) {
    const uint layer = p.layer - l;
    const uint mats_base = layer * 2u * MAT * p.batch;
    const bool query = QUERY_TOP && l == 0u;  // the gradient is the loss's one slot
    const uint row_first = query ? D1 - 1u : 0u;  // query: dB, and the products from it, have one row
    icl_stage_params(layer);
    ICL_WG_LOAD(s_x, acts, layer * TOKEN_ELEMS * p.batch, TOKEN_ELEMS)
    ICL_WG_LOAD(s_a, mats, mats_base, MAT)
    barrier();  // tokens, gradient, A and parameters staged
    // dB = sum over tokens of g x^T (query: its last row, from the query token alone; the rows
    // above are zero). dA starts at zero.
    for (uint e = lane; e < MAT; e += LANES) {
      if (e < row_first * D1) s_db[m0 + e] = 0.0;
      s_da[m0 + e] = 0.0;
    }
    ICL_BLOCKS(false, D1, row_first, 0u, 0.0,
               ICL_ACCUMULATE(true, query ? NCTX : 0u, TOKENS, s_g[x0 + k_ * D1 + r_], s_x[x0 + k_ * D1 + c_]),
               s_db[m0 + r_ * D1 + c_] = v_)
    barrier();

    for (uint h = 0u; h < HEADS; ++h) {
      const uint base = h * BLOCK;
      if (PARAM == 0u) {
        // tmp = dB Q^T, then dP = s tmp A (query: their last rows; dP's others are zero).
        ICL_BLOCKS(false, D1, row_first, 0u, 0.0,
                   ICL_ACCUMULATE(true, 0u, D1, s_db[m0 + r_ * D1 + k_], param_q(base, c_, k_)),
                   s_tmp[m0 + r_ * D1 + c_] = v_)
        barrier();
        for (uint e = lane; e < row_first * D1; e += LANES) s_part[q0 + base + e] = 0.0;
        ICL_BLOCKS(false, D1, row_first, 0u, 0.0,
                   ICL_ACCUMULATE(true, 0u, D1, s_tmp[m0 + r_ * D1 + k_], s_a[m0 + k_ * D1 + c_]),
                   s_part[q0 + base + r_ * D1 + c_] = p.scale * v_)
        barrier();
        // tmp = P^T dB, then dQ = s A tmp and dA += s tmp Q^T.
        ICL_BLOCKS(false, D1, 0u, 0u, 0.0,
                   ICL_ACCUMULATE(true, query ? D1 - 1u : 0u, D1, param_p(base, k_, r_), s_db[m0 + k_ * D1 + c_]),
                   s_tmp[m0 + r_ * D1 + c_] = v_)
        barrier();
        ICL_BLOCKS(false, D1, 0u, 0u, 0.0,
                   ICL_ACCUMULATE(true, 0u, D1, s_a[m0 + r_ * D1 + k_], s_tmp[m0 + k_ * D1 + c_]),
                   s_part[q0 + base + MAT + r_ * D1 + c_] = p.scale * v_)
        ICL_BLOCKS(false, D1, 0u, 0u, 0.0,
                   ICL_ACCUMULATE(true, 0u, D1, s_tmp[m0 + r_ * D1 + k_], param_q(base, c_, k_)),
                   s_da[m0 + r_ * D1 + c_] += p.scale * v_)
        barrier();  // s_tmp is rewritten by the next head
      } else {
        for (uint a = lane; a < D1; a += LANES) {
          float dp = 0.0;
          float dq = 0.0;
          for (uint c = 0u; c < D1; ++c) {
            dp += s_db[m0 + a * D1 + c] * diag_q(base, c) * s_a[m0 + c * D1 + a];
            dq += s_a[m0 + a * D1 + c] * diag_p(base, c) * s_db[m0 + c * D1 + a];
          }
          s_dp[d0 + a] = dp;
          s_dq[d0 + a] = dq;
        }
        for (uint e = lane; e < MAT; e += LANES) {
          const uint a = e / D1, b = e % D1;
          s_da[m0 + e] += p.scale * diag_p(base, a) * s_db[m0 + e] * diag_q(base, b);
        }
        barrier();
        if (lane == 0u) {
          float dpx = 0.0, dqx = 0.0;
          for (uint a = 0u; a + 1u < D1; ++a) {
            dpx += s_dp[d0 + a];
            dqx += s_dq[d0 + a];
          }
          s_part[q0 + base + 0u] = p.scale * dpx;
          s_part[q0 + base + 1u] = p.scale * s_dp[d0 + D1 - 1u];
          s_part[q0 + base + 2u] = p.scale * dqx;
          if (PARAM == 1u) s_part[q0 + base + 3u] = p.scale * s_dq[d0 + D1 - 1u];
        }
        barrier();  // s_dp and s_dq are rewritten by the next head
      }
    }
    barrier();  // the parameter gradients and dA complete
    ICL_WG_STORE(partials, s_part, layer * PARAMS * p.batch, PARAMS)

    // The gradient of the layer's input: the next layer's output gradient, or the dispatch's result.
    const bool last = l + 1u == LAYERS;
    if (last && p.input_grad == 0u) return;  // uniform
    ICL_WG_LOAD(s_tmp, mats, mats_base + MAT * p.batch, MAT)  // B
    // dA + dA^T once per entry (dB is done with): the context tokens' terms then read one word, not two.
    for (uint e = lane; e < MAT; e += LANES) s_db[m0 + e] = s_da[m0 + e] + s_da[m0 + (e % D1) * D1 + e / D1];
    barrier();
    // gn = g + B^T g per token (query: only the query's, from its label slot) + (dA + dA^T) x per
    // context token.
    ICL_BLOCKS(false, TOKENS, 0u, 0u, s_g[x0 + r_ * D1 + c_],
               ICL_ACCUMULATE(!query || r_ == NCTX, query ? D1 - 1u : 0u, D1, s_g[x0 + r_ * D1 + k_],
                              s_tmp[m0 + k_ * D1 + c_])
               ICL_ACCUMULATE(r_ < NCTX, 0u, D1, s_x[x0 + r_ * D1 + k_], s_db[m0 + c_ * D1 + k_]),
               s_gn[x0 + r_ * D1 + c_] = v_)
    barrier();  // the input gradient complete; everything else read
    if (last) {
      ICL_WG_STORE(g_in, s_gn, 0u, TOKEN_ELEMS)
    } else {
      for (uint i = gl_LocalInvocationIndex; i < TASKS * TOKEN_ELEMS; i += WG_SIZE) s_g[i] = s_gn[i];
    }
  }
}
