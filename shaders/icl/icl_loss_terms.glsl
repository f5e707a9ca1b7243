// A task's loss from the model's output, shared by icl_loss.comp (evaluation) and the backward
// kernels' LOSS_SEED dispatch (training). The includer declares the buffers acts (every layer's
// tokens, icl_model.glsl), targets, task_loss and preds, and the push block p (with batch); and
// ICL_ACTS_AT(i) where acts is not a storage buffer.
//
// pred = -(label slot of the query token after the last layer); loss_t = c (pred - target)^2. The
// gradient of each model's mean loss with respect to the output tokens is zero but at the query's
// label slot: -2 c (pred - target) / model_tasks.

// Writes task slot t's loss and prediction (`layers`: the model's layer count, so acts' top slice
// is the output) and returns the gradient at the label slot.
#ifndef ICL_ACTS_AT
#define ICL_ACTS_AT(i) acts[i]
#endif

float icl_task_loss(uint t, uint layers, float loss_factor, uint model_tasks) {
  const float pred = -ICL_ACTS_AT((layers * TOKEN_ELEMS + QUERY_LABEL) * p.batch + t);
  precise const float diff = pred - targets[t];
  precise const float loss = loss_factor * diff * diff;
  task_loss[t] = loss;
  preds[t] = pred;
  precise const float seed = -2.0 * loss_factor * diff / float(model_tasks);
  return seed;
}
