// The task slot of a per-task layer kernel's invocation (icl_layer_fwd.glsl, icl_layer_bwd.glsl);
// include after the push block p. False for a slot past the batch or one a cohort leaves idle;
// else sets g_model_params to the slot's model. The workgroup's first slot names the model, which
// is uniform over the workgroup (see contract/icl.glsl).
bool icl_task_slot(out uint t) {
  t = rill_global_index();
  if (t >= p.batch) return false;
  const uint model = ((gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * WG_SIZE) / p.model_stride;
  if (t - model * p.model_stride >= p.model_tasks) return false;
  g_model_params = model * p.model_params;
  return true;
}
