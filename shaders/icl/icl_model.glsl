// Shared definitions of the ICL linear-transformer kernels (see engine/ref/icl.hpp for the model).
// One invocation per task. Every per-task array is stored element-major, task-minor:
// element e of task t lives at [e * batch + t], so the invocations of a workgroup (and the SIMD
// lanes of a CPU driver) read and write neighbouring addresses.
// Buffers: acts = the input tokens of every layer plus the output, [L + 1][TOKENS * D1][batch];
// mats = per layer A (context covariance) and B (the layer's update matrix), [L][2][D1 * D1][batch].
#ifndef RILL_ICL_MODEL_GLSL
#define RILL_ICL_MODEL_GLSL

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "rill_common.glsl"

// Each invocation keeps its task's tokens and matrices in private arrays sized by the
// specialization constants, so no global memory is touched between the loads and the stores.
// The includer defines UNROLL: [[unroll]] turns the arrays into registers (every trip count is
// known at pipeline creation) but costs LLVM seconds per pipeline at d = 10 (the first training
// step at the Vladymyrov setting: 53 s); [[dont_unroll]] compiles any shape in about a second.
// The per-task backward moves its parameters in and its parameter and input gradients out through
// a private copy and one rolled loop (STAGED), not a load or store per element: lavapipe compiles
// every storage-buffer access to a loop over the SIMD lanes, and LLVM's time grows much faster than
// the number of such loops. Staged, the unrolled backward compiled 3-9x and ran 1.5-1.8x faster
// (.ci/timing/icl-staged-backward.txt); the forward, staged the same way, ran 10-40 % slower, so it
// keeps a store per element.
#define STAGED [[dont_unroll]]

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint D1 = 2;     // token width d + 1 (features, then the label)
layout(constant_id = 2) const uint NCTX = 1;   // context tokens n; the query is token n
layout(constant_id = 3) const uint HEADS = 1;
layout(constant_id = 4) const uint PARAM = 0;  // 0 FULL (P, Q), 1 DIAG (p_x, p_y, q_x, q_y), 2 GD++ (p_x, p_y, q_x)
// The layer kernels' layers per dispatch: the forward runs p.layer .. p.layer + LAYERS - 1, the
// backward p.layer down to p.layer - LAYERS + 1, each task's tokens and gradient kept on chip
// between them.
layout(constant_id = 6) const uint LAYERS = 1;
// The dispatch holds the model's top layer, which computes only what the loss reads (the query's
// prediction; icl_layer_fwd.glsl): the last layer of a forward dispatch, the first of a backward
// one. Known at pipeline creation, so that no layer's code branches on it: with a run-time branch
// in their unrolled loops lavapipe ran every backward layer about twice as slow.
layout(constant_id = 7) const bool QUERY_TOP = false;
// The backward dispatch holding the model's top layer computes each task's loss and its gradient,
// the seed of the backward pass, itself (icl_loss_terms.glsl) instead of reading them from a loss
// dispatch before it: one dispatch, one barrier and a write and read of the zero gradient less
// per training step.
layout(constant_id = 8) const bool LOSS_SEED = false;
// The forward kernels store each layer's A and B for the backward (p.save_mats); an evaluation,
// which has no backward, leaves them out, and its workspace holds no matrices. A push constant,
// not a specialization: training and evaluation then share the forward pipelines, and on lavapipe
// (which compiles a pipeline's machine code at its first dispatch, 4-13 s for each forward at the
// Vladymyrov setting) the first training step with its evaluation compiled in 33 s against 53 s, the
// branch costing no speed beyond the noise (.ci/timing/icl-save-mats-push.txt).
layout(local_size_x_id = 0) in;

const uint TOKENS = NCTX + 1u;
const uint TOKEN_ELEMS = TOKENS * D1;
const uint MAT = D1 * D1;
const uint BLOCK = PARAM == 0u ? 2u * MAT : (PARAM == 1u ? 4u : 3u);
const uint QUERY_LABEL = NCTX * D1 + (D1 - 1u);  // the query token's label slot: minus the prediction

// P and Q of the head whose parameters start at `base`, entry (a, b).
float param_p(uint base, uint a, uint b);
float param_q(uint base, uint a, uint b);
// Their diagonals (DIAG and GD++).
float diag_p(uint base, uint a);
float diag_q(uint base, uint a);

// `base` counts within one model; g_model_params is where the task's model starts (a cohort
// of models keeps their parameters one after another).
uint g_model_params;
#define RILL_ICL_PARAM_ACCESSORS(params)                                                         \
  float param_p(uint base, uint a, uint b) {                                                     \
    if (PARAM == 0u) return params[g_model_params + base + a * D1 + b];                          \
    return a == b ? diag_p(base, a) : 0.0;                                                       \
  }                                                                                              \
  float param_q(uint base, uint a, uint b) {                                                     \
    if (PARAM == 0u) return params[g_model_params + base + MAT + a * D1 + b];                    \
    return a == b ? diag_q(base, a) : 0.0;                                                       \
  }                                                                                              \
  float diag_p(uint base, uint a) { return params[g_model_params + base + (a + 1u == D1 ? 1u : 0u)]; } \
  float diag_q(uint base, uint a) {                                                              \
    if (a + 1u == D1) return PARAM == 1u ? params[g_model_params + base + 3u] : 0.0;             \
    return params[g_model_params + base + 2u];                                                   \
  }

#endif  // RILL_ICL_MODEL_GLSL
