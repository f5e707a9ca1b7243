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
