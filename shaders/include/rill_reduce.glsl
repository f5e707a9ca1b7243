// Workgroup reductions (sum and max), deterministic: the same inputs give the same bits.
//   Default: subgroupAdd/subgroupMax within each subgroup, then the subgroup partials through
//   shared memory in a fixed order. When the workgroup is one subgroup - rill's choice on CPU
//   drivers, where barriers are expensive - no barrier runs at all.
//   RILL_NO_SUBGROUP_ARITHMETIC (devices without it, such as Mali-class GPUs): a tree over shared
//   memory, halving the active width each step.
// Needs WG_SIZE (the workgroup size specialization constant) declared before inclusion, and every
// invocation of the workgroup must call it (it contains barriers).
#ifndef RILL_REDUCE_GLSL
#define RILL_REDUCE_GLSL
#extension GL_KHR_shader_subgroup_basic : require

shared float rill_partials[WG_SIZE];

float rill_reduce_combine(float a, float b, const bool take_max) { return take_max ? max(a, b) : a + b; }

#ifdef RILL_NO_SUBGROUP_ARITHMETIC

float rill_workgroup_reduce(float v, const bool take_max) {
  const uint lid = gl_LocalInvocationIndex;
  rill_partials[lid] = v;
  barrier();  // values written -> combined
  for (uint width = WG_SIZE; width > 1;) {
    const uint upper = (width + 1) / 2;  // [upper, width) folds onto [0, width - upper)
    if (lid + upper < width) rill_partials[lid] = rill_reduce_combine(rill_partials[lid], rill_partials[lid + upper], take_max);
    width = upper;
    barrier();  // this step's results -> the next step
  }
  const float total = rill_partials[0];
  barrier();  // read by every invocation -> may be overwritten by the next reduction
  return total;
}

#else
#extension GL_KHR_shader_subgroup_arithmetic : require

float rill_workgroup_reduce(float v, const bool take_max) {
  const float s = take_max ? subgroupMax(v) : subgroupAdd(v);
  if (gl_NumSubgroups == 1) return s;  // uniform across the workgroup
  if (subgroupElect()) rill_partials[gl_SubgroupID] = s;
  barrier();  // partials written -> read by every invocation
  float total = rill_partials[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) total = rill_reduce_combine(total, rill_partials[i], take_max);
  barrier();  // partials read -> may be overwritten by the next reduction
  return total;
}

#endif

float rill_workgroup_sum(float v) { return rill_workgroup_reduce(v, false); }
float rill_workgroup_max(float v) { return rill_workgroup_reduce(v, true); }

#endif  // RILL_REDUCE_GLSL
