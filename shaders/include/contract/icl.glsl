// Contracts of the ICL training kernels in shaders/icl (see prelude.glsl).
#ifndef RILL_CONTRACT_ICL_GLSL
#define RILL_CONTRACT_ICL_GLSL
#include "contract/prelude.glsl"

// The words of the trainer's state buffer (uint each), which the kernels advance so the host
// does no per-step work.
const uint kIclStateStep = 0u;           // steps taken (the sampler's step)
const uint kIclStateHalted = 1u;         // 1 once a non-finite step halted training
const uint kIclStateHaltedStep = 2u;     // the step that halted it
const uint kIclStateNonFinite = 3u;      // what was non-finite last step: bit 0 loss, bit 1 gradient, bit 2 the update
const uint kIclStateSkipped = 4u;        // batches skipped for non-finite values
const uint kIclStateBeta1Power = 5u;     // beta1^step (float bits)
const uint kIclStateBeta2Power = 6u;     // beta2^step (float bits)
const uint kIclStateSetCursor = 7u;      // the next task of a task set trained on
const uint kIclStateWords = 8u;

// icl_optimize's OPTIMIZER.
const uint kIclSgd = 0u;  // with momentum
const uint kIclAdam = 1u;

const uint kIclMaxCategories = 6u;

// One model of a cohort: models that share a shape train in the same dispatches (a cohort of
// one is the plain trainer). What may differ between them lives here, one entry per model, read
// by icl_sample (entry task / model_tasks) and icl_optimize (entry = workgroup); everything else
// is pushed. Plain 32-bit members, so the std430 array stride is the C++ size.
struct IclModelEntry {
  uint seed_lo;
  uint seed_hi;
  uint noise_kind;
  uint category_count;
  float sigma_max;
  float categories[kIclMaxCategories];
  uint stop_on_nonfinite;  // 1: halt (no more updates); 0: skip the batch and go on
  float lr;
  float beta1;  // SGD: momentum
  float beta2;
  float eps;
  float clip_norm;  // <= 0: no clipping
};
const uint kIclModelEntryWords = 17u;

// Per-model buffers of a cohort are model-major: params [models][params], the state words
// [models][kIclStateWords], the loss ring [models][capacity][2], the reduced gradient
// [models][params + 1]. Per-task buffers span models * model_stride task slots, model m's
// model_tasks tasks from slot m * model_stride on. With several models the stride is rounded up
// to a multiple of 64, so no workgroup of the per-task kernels spans two models and the model's
// parameter offset is uniform over it (a CPU driver then loads each parameter once, not per
// lane); the slots past model_tasks are idle.
RILL_PUSH_STRUCT(IclSamplePush) {
  uint batch;           // task slots in the dispatch, models * model_stride
  uint model_tasks;     // tasks per model
  uint model_stride;    // task slots per model
  uint first_task;      // added to the task's index within its model (evaluation in chunks)
  uint step;            // used when use_state_step == 0
  uint use_state_step;  // 1: step = the model's state step word
  uint d;
  uint n;
  uint data_kind;
  uint stream_base;
  float gamma_shape;
  float gamma_scale;
  float gamma_inv_shape;
  float gamma_mt_d;
  float gamma_mt_c;
};

// icl_layer_fwd and icl_layer_bwd (one layout for both).
RILL_PUSH_STRUCT(IclLayerPush) {
  uint batch;  // task slots
  uint model_tasks;
  uint model_stride;
  uint model_params;  // parameters per model: slot t reads model t / model_stride's
  uint layer;
  float scale;      // s: 1/n (Ahn et al.) or 1 (Vladymyrov et al.)
  uint input_grad;  // backward: 0 when the dispatch's lowest layer is the first (the data needs no gradient)
  float loss_factor;  // backward with LOSS_SEED: c of the per-task loss c (pred - target)^2
  uint save_mats;     // forward: 1 keeps each layer's A and B for a backward pass (icl_model.glsl)
};

RILL_PUSH_STRUCT(IclLossPush) {  // icl_loss: evaluation (training's backward computes the loss itself)
  uint batch;  // task slots
  uint model_tasks;  // the loss is a mean over each model's tasks
  uint model_stride;
  uint layers;
  float loss_factor;  // c: 1 (Ahn et al.) or 1/2 (Vladymyrov et al.)
};

RILL_PUSH_STRUCT(IclReducePush) {
  uint params;       // per model
  uint model_tasks;  // summed per model
  uint model_stride;
  uint models;
};

RILL_PUSH_STRUCT(IclOptimizePush) {  // one workgroup per model; hyperparameters in IclModelEntry
  uint params;  // per model
  uint history_capacity;
  uint set_tasks;  // tasks in the task set trained on; 0: tasks are sampled
  uint batch;      // tasks per model and step
};

RILL_PUSH_STRUCT(IclGatherPush) {
  uint batch;
  uint tasks;        // in the set
  uint token_elems;  // (n + 1) * (d + 1)
};

#endif  // RILL_CONTRACT_ICL_GLSL
