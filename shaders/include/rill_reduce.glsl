// Workgroup reductions: subgroupAdd within each subgroup, then the subgroup partials through shared
// memory in a fixed order (deterministic). When the workgroup is one subgroup - rill's choice on
// CPU drivers, where barriers are expensive - no barrier runs at all.
// Needs WG_SIZE (the workgroup size specialization constant) declared before inclusion, and every
// invocation of the workgroup must call it (it may contain barriers).
#ifndef RILL_REDUCE_GLSL
#define RILL_REDUCE_GLSL
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

shared float rill_partials[WG_SIZE];

float rill_workgroup_sum(float v) {
  const float s = subgroupAdd(v);
  if (gl_NumSubgroups == 1) return s;  // uniform across the workgroup
  if (subgroupElect()) rill_partials[gl_SubgroupID] = s;
  barrier();  // partials written -> read by every invocation
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += rill_partials[i];
  barrier();  // partials read -> may be overwritten by the next reduction
  return total;
}

#endif  // RILL_REDUCE_GLSL
