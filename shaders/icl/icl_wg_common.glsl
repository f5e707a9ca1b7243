// What the workgroup layer kernels (icl_layer_fwd_wg.comp, icl_layer_bwd_wg.comp) share: a
// workgroup takes TASKS neighbouring task slots, LANES = WG_SIZE / TASKS invocations each, and
// keeps their tokens and matrices in shared memory, [task][element]. Global arrays are
// element-major, task-minor ([e * batch + t], icl_model.glsl), so the loads and stores walk
// (element, task) pairs with the task fastest: neighbouring invocations touch neighbouring
// addresses. The layer's parameters are staged once per workgroup: every task of a workgroup
// belongs to one model (TASKS divides 64, and a cohort's model stride is a multiple of 64).
//
// The includer defines UNROLL, includes icl_model.glsl, declares `params` and the push block p.
layout(constant_id = 5) const uint TASKS = 1;  // a power of two up to 64 that divides WG_SIZE
const uint LANES = WG_SIZE / TASKS;
// Each invocation computes BS x BS outputs of a task's matrix products (1: one output each), so
// every operand it loads from shared memory serves BS products instead of one: on a GPU a product
// with one output per invocation issues two shared loads per multiply-add, the limit of these
// kernels. A specialization constant: the blocks' accumulators stay in registers.
layout(constant_id = 9) const uint BS = 1;

shared float s_params[HEADS * BLOCK];  // the current layer's parameters (heads one after another)
RILL_ICL_PARAM_ACCESSORS(s_params)

uint g_first_slot;  // the workgroup's first task slot

// Whether slot `t` holds a task (the batch's tail and a cohort's padding slots hold none).
bool icl_slot_active(uint t) { return t < p.batch && t % p.model_stride < p.model_tasks; }

// Sets g_first_slot and the model; false when no slot of the workgroup is active (uniform).
bool icl_wg_begin() {
  g_first_slot = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * TASKS;
  g_model_params = 0u;  // the accessors read s_params, which holds one layer of one model
  return icl_slot_active(g_first_slot);
}

// s_params <- layer `layer`'s parameters of the workgroup's model. Call between barriers.
void icl_stage_params(uint layer) {
  const uint model_base = (g_first_slot / p.model_stride) * p.model_params + layer * HEADS * BLOCK;
  for (uint i = gl_LocalInvocationIndex; i < HEADS * BLOCK; i += WG_SIZE) s_params[i] = params[model_base + i];
}

// Coalesced walks over the workgroup's (element, task) pairs of a count-element array: the
// includer's loops read `src[base + e * p.batch + g_first_slot + k]` into `dst[k * count + e]` (or
// the reverse), inactive slots read as zero and are never written. Pair i = e TASKS + k goes to
// invocation i % WG_SIZE, so an invocation's task k = lid % TASKS is the same at every step (TASKS
// divides WG_SIZE): whether its slot holds a task (a runtime modulo) is decided once per walk.
#define ICL_WG_LOAD(dst, src, base, count)                                                  \
  {                                                                                         \
    const uint k_ = gl_LocalInvocationIndex % TASKS, t_ = g_first_slot + k_;                \
    const bool on_ = icl_slot_active(t_);                                                   \
    for (uint e_ = gl_LocalInvocationIndex / TASKS; e_ < (count); e_ += WG_SIZE / TASKS)    \
      dst[k_ * (count) + e_] = on_ ? src[(base) + e_ * p.batch + t_] : 0.0;                 \
  }
#define ICL_WG_STORE(dst, src, base, count)                                                 \
  {                                                                                         \
    const uint k_ = gl_LocalInvocationIndex % TASKS, t_ = g_first_slot + k_;                \
    if (icl_slot_active(t_))                                                                \
      for (uint e_ = gl_LocalInvocationIndex / TASKS; e_ < (count); e_ += WG_SIZE / TASKS)  \
        dst[(base) + e_ * p.batch + t_] = src[k_ * (count) + e_];                           \
  }

// The task's matrix products, in BS x BS blocks of outputs over its LANES invocations:
//   out[r][c] = INIT + sum over k of L * R   for rows ROW0..ROWS-1 and columns COL0..D1-1,
// BODY being one or more ICL_ACCUMULATE terms, each a loop over k in order (every output's sum in
// the order of the per-task kernels, whichever invocation computes it). The expressions see r_
// (the row), c_ (the column) and k_; STORE sees r_, c_ and the sum v_. A block's rows and columns
// past the end are clamped to the last (computed and not stored), so the loops have no branches.
// TRI: the output is symmetric (ROWS = D1, ROW0 = COL0 = 0); only the blocks on and above the
// diagonal are computed, and STORE is given each entry with r_ <= c_ once.
#define ICL_BLOCKS(TRI, ROWS, ROW0, COL0, INIT, BODY, STORE)                                   \
  {                                                                                         \
    /* not const: a const copy of a specialization constant would rename it in the SPIR-V */ \
    uint rows_ = (ROWS);                                                                    \
    const uint nbc_ = (D1 - (COL0) + BS - 1u) / BS;                                         \
    const uint nbr_ = (rows_ - (ROW0) + BS - 1u) / BS;                                      \
    const uint blocks_ = (TRI) ? nbc_ * (nbc_ + 1u) / 2u : nbr_ * nbc_;                     \
    for (uint blk_ = lane; blk_ < blocks_; blk_ += LANES) {                                 \
      uint br_ = 0u, bc_ = blk_;                                                            \
      if (TRI) {                                                                            \
        for (; bc_ >= nbc_ - br_; ++br_) bc_ -= nbc_ - br_; /* row br_ holds nbc_ - br_ */  \
        bc_ += br_;                                                                         \
      } else {                                                                              \
        br_ = blk_ / nbc_;                                                                  \
        bc_ = blk_ % nbc_;                                                                  \
      }                                                                                     \
      const uint r0_ = (ROW0) + br_ * BS, c0_ = (COL0) + bc_ * BS;                          \
      float acc_[BS][BS];                                                                   \
      [[unroll]] for (uint i_ = 0u; i_ < BS; ++i_) {                                        \
        const uint r_ = min(r0_ + i_, rows_ - 1u);                                         \
        [[unroll]] for (uint j_ = 0u; j_ < BS; ++j_) {                                      \
          const uint c_ = min(c0_ + j_, D1 - 1u);                                           \
          acc_[i_][j_] = (INIT);                                                            \
        }                                                                                   \
      }                                                                                     \
      BODY                                                                                  \
      [[unroll]] for (uint i_ = 0u; i_ < BS; ++i_) {                                        \
        [[unroll]] for (uint j_ = 0u; j_ < BS; ++j_) {                                      \
          const uint r_ = r0_ + i_, c_ = c0_ + j_;                                          \
          if (r_ < rows_ && c_ < D1 && (!(TRI) || r_ <= c_)) {                             \
            const float v_ = acc_[i_][j_];                                                  \
            STORE;                                                                          \
          }                                                                                 \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }
// One term of an ICL_BLOCKS body: acc += L * R over k = K0..K1-1, for the block's rows where ROW_OK
// (an expression of r_). L is an expression of r_ and k_, R of k_ and c_: each loaded once per k.
#define ICL_ACCUMULATE(ROW_OK, K0, K1, L, R)                                                \
  for (uint k_ = (K0); k_ < (K1); ++k_) {                                                   \
    float r_vals_[BS];                                                                      \
    [[unroll]] for (uint j_ = 0u; j_ < BS; ++j_) {                                          \
      const uint c_ = min(c0_ + j_, D1 - 1u);                                               \
      r_vals_[j_] = (R);                                                                    \
    }                                                                                       \
    [[unroll]] for (uint i_ = 0u; i_ < BS; ++i_) {                                          \
      const uint r_ = min(r0_ + i_, rows_ - 1u);                                           \
      if (ROW_OK) {                                                                         \
        const float l_val_ = (L);                                                           \
        [[unroll]] for (uint j_ = 0u; j_ < BS; ++j_) acc_[i_][j_] += l_val_ * r_vals_[j_];  \
      }                                                                                     \
    }                                                                                       \
  }
