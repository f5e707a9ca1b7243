// Contracts of the ICL training kernels in shaders/icl (see prelude.glsl).
#ifndef RILL_CONTRACT_ICL_GLSL
#define RILL_CONTRACT_ICL_GLSL
#include "contract/prelude.glsl"

// The words of the trainer's state buffer (uint each), which the kernels advance so the host
// does no per-step work.
const uint kIclStateStep = 0u;           // steps taken (the sampler's step)
const uint kIclStateHalted = 1u;         // 1 once a non-finite step halted training
const uint kIclStateHaltedStep = 2u;     // the step that halted it
const uint kIclStateNonFinite = 3u;      // what was non-finite last step: bit 0 loss, bit 1 gradient
const uint kIclStateSkipped = 4u;        // batches skipped for non-finite values
const uint kIclStateBeta1Power = 5u;     // beta1^step (float bits)
const uint kIclStateBeta2Power = 6u;     // beta2^step (float bits)
const uint kIclStateSetCursor = 7u;      // the next task of a task set trained on
const uint kIclStateWords = 8u;

// icl_optimize's OPTIMIZER.
const uint kIclSgd = 0u;  // with momentum
const uint kIclAdam = 1u;

const uint kIclMaxCategories = 6u;

RILL_PUSH_STRUCT(IclSamplePush) {
  uint batch;
  uint first_task;
  uint step;            // used when use_state_step == 0
  uint use_state_step;  // 1: step = the state's step word
  uint seed_lo;
  uint seed_hi;
  uint d;
  uint n;
  uint data_kind;
  uint noise_kind;
  uint category_count;
  uint stream_base;
  float sigma_max;
  float categories[kIclMaxCategories];
  float gamma_shape;
  float gamma_scale;
  float gamma_inv_shape;
  float gamma_mt_d;
  float gamma_mt_c;
};

// icl_layer_fwd and icl_layer_bwd (one layout for both).
RILL_PUSH_STRUCT(IclLayerPush) {
  uint batch;
  uint layer;
  float scale;      // s: 1/n (Ahn et al.) or 1 (Vladymyrov et al.)
  uint input_grad;  // backward: 0 for the first layer (the data needs no gradient)
};

RILL_PUSH_STRUCT(IclLossPush) {
  uint batch;
  uint layers;
  float loss_factor;  // c: 1 (Ahn et al.) or 1/2 (Vladymyrov et al.)
  uint write_grad;    // 0 for evaluation
};

RILL_PUSH_STRUCT(IclReducePush) {
  uint params;
  uint batch;
};

RILL_PUSH_STRUCT(IclOptimizePush) {
  uint params;
  uint history_capacity;
  uint stop_on_nonfinite;  // 1: halt (no more updates); 0: skip the batch and go on
  float lr;
  float beta1;  // SGD: momentum
  float beta2;
  float eps;
  float clip_norm;  // <= 0: no clipping
  uint set_tasks;   // tasks in the task set trained on; 0: tasks are sampled
  uint batch;
};

RILL_PUSH_STRUCT(IclGatherPush) {
  uint batch;
  uint tasks;        // in the set
  uint token_elems;  // (n + 1) * (d + 1)
};

#endif  // RILL_CONTRACT_ICL_GLSL
