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
    icl_stage_params(layer);
    ICL_WG_LOAD(s_x, acts, layer * TOKEN_ELEMS * p.batch, TOKEN_ELEMS)
    ICL_WG_LOAD(s_a, mats, mats_base, MAT)
    barrier();  // tokens, gradient, A and parameters staged
    for (uint e = lane; e < MAT; e += LANES) {
      const uint a = e / D1, b = e % D1;
      float sum = 0.0;
      if (!query || a + 1u == D1)
        for (uint i = query ? NCTX : 0u; i < TOKENS; ++i) sum += s_g[x0 + i * D1 + a] * s_x[x0 + i * D1 + b];
      s_db[m0 + e] = sum;
      s_da[m0 + e] = 0.0;
    }
    barrier();

    for (uint h = 0u; h < HEADS; ++h) {
      const uint base = h * BLOCK;
      if (PARAM == 0u) {
        // tmp = dB Q^T, then dP = s tmp A.
        for (uint e = lane; e < MAT; e += LANES) {
          const uint a = e / D1, b = e % D1;
          float sum = 0.0;
          if (!query || a + 1u == D1)
            for (uint c = 0u; c < D1; ++c) sum += s_db[m0 + a * D1 + c] * param_q(base, b, c);
          s_tmp[m0 + e] = sum;
        }
        barrier();
        for (uint e = lane; e < MAT; e += LANES) {
          const uint a = e / D1, b = e % D1;
          if (query && a + 1u != D1) {
            s_part[q0 + base + e] = 0.0;
            continue;
          }
          float sum = 0.0;
          for (uint c = 0u; c < D1; ++c) sum += s_tmp[m0 + a * D1 + c] * s_a[m0 + c * D1 + b];
          s_part[q0 + base + e] = p.scale * sum;
        }
        barrier();
        // tmp = P^T dB, then dQ = s A tmp and dA += s tmp Q^T.
        for (uint e = lane; e < MAT; e += LANES) {
          const uint a = e / D1, b = e % D1;
          float sum = 0.0;
          for (uint c = query ? D1 - 1u : 0u; c < D1; ++c) sum += param_p(base, c, a) * s_db[m0 + c * D1 + b];
          s_tmp[m0 + e] = sum;
        }
        barrier();
        for (uint e = lane; e < MAT; e += LANES) {
          const uint a = e / D1, b = e % D1;
          float dq = 0.0;
          float dav = 0.0;
          for (uint c = 0u; c < D1; ++c) {
            dq += s_a[m0 + a * D1 + c] * s_tmp[m0 + c * D1 + b];
            dav += s_tmp[m0 + a * D1 + c] * param_q(base, b, c);
          }
          s_part[q0 + base + MAT + e] = p.scale * dq;
          s_da[m0 + e] += p.scale * dav;
        }
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
    for (uint e = lane; e < TOKEN_ELEMS; e += LANES) {
      const uint i = e / D1, a = e % D1;
      float sum = s_g[x0 + e];
      if (!query || i == NCTX)
        for (uint b = query ? D1 - 1u : 0u; b < D1; ++b) sum += s_tmp[m0 + b * D1 + a] * s_g[x0 + i * D1 + b];
      if (i < NCTX) {
        for (uint b = 0u; b < D1; ++b) sum += s_db[m0 + a * D1 + b] * s_x[x0 + i * D1 + b];
      }
      s_gn[x0 + e] = sum;
    }
    barrier();  // the input gradient complete; everything else read
    if (last) {
      ICL_WG_STORE(g_in, s_gn, 0u, TOKEN_ELEMS)
    } else {
      for (uint i = gl_LocalInvocationIndex; i < TASKS * TOKEN_ELEMS; i += WG_SIZE) s_g[i] = s_gn[i];
    }
  }
}
