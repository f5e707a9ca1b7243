// Softmax attention of query rows over a per-head key/value cache (decoding):
//   query row r sits at position t = pos[0] + r and sees positions [first(t), t], where
//   first(t) = t - t % BLOCK (DiagAttention: its own block) or 0 (BLOCK = 0: full causal
//   attention, the softmax baseline); position s is cache row s % BLOCK, or s.
//   o[h, r] = sum_s softmax_s(scale * q[h, r] . k_s) v_s
// q [H, NQ, DK], cache_k [H, cap, DK], cache_v [H, cap, DV], o [H, NQ, DV].
// One workgroup per (row, head); its invocations take every WG_SIZE-th key with an online
// softmax each (numerically stable: logits of 1e4 do not overflow), then merge their partial
// results through subgroup reductions and, across subgroups, shared memory (without subgroup
// arithmetic, RILL_NO_SUBGROUP_ARITHMETIC: all through shared memory, CHANNELS accumulator channels
// at a time). DK and DV are specialization constants so that the per-invocation q and accumulator
// arrays stay in registers.
#extension GL_EXT_control_flow_attributes : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint BLOCK = 0;
layout(constant_id = 2) const uint DK = 32;
layout(constant_id = 3) const uint DV = 32;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer CacheK { sfloat cache_k[]; };
layout(std430, binding = 2) readonly buffer CacheV { sfloat cache_v[]; };
layout(std430, binding = 3) readonly buffer Pos { uint pos[]; };
layout(std430, binding = 4) writeonly buffer O { sfloat o[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { AttendPush p; };

#ifdef RILL_NO_SUBGROUP_ARITHMETIC
#include "rill_reduce.glsl"
const uint CHANNELS = 16;  // WG_SIZE <= 128: 8 KiB
shared float sh_channels[CHANNELS * WG_SIZE];
#else
#extension GL_KHR_shader_subgroup_arithmetic : require
const uint MAX_SUBGROUPS = 32;  // the host keeps WG_SIZE <= 32 subgroups
shared float sh_m[MAX_SUBGROUPS];
shared float sh_l[MAX_SUBGROUPS];
shared float sh_acc[MAX_SUBGROUPS * DV];
#endif

void main() {
  const uint r = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
  const uint t = pos[0] + r;
  const uint first = BLOCK > 0 ? t - t % BLOCK : 0;
  afloat qv[DK];
  [[unroll]] for (uint i = 0; i < DK; ++i) qv[i] = afloat(q[(h * p.nq + r) * DK + i]) * p.scale;
  afloat m = -1.0 / 0.0, l = 0.0;
  afloat acc[DV];
  [[unroll]] for (uint c = 0; c < DV; ++c) acc[c] = 0.0;
  // Offsets from the block's first key: a position near 2^32 would wrap s + WG_SIZE.
  for (uint o = lid; o <= t - first; o += WG_SIZE) {
    const uint s = first + o, row = BLOCK > 0 ? s % BLOCK : s;
    const uint kb = (h * p.cap + row) * DK, vb = (h * p.cap + row) * DV;
    afloat z = 0.0;
    [[unroll]] for (uint i = 0; i < DK; ++i) z += qv[i] * afloat(cache_k[kb + i]);
    const afloat m_new = max(m, z);
    const afloat keep = exp(m - m_new), e = exp(z - m_new);
    l = l * keep + e;
    [[unroll]] for (uint c = 0; c < DV; ++c) acc[c] = acc[c] * keep + e * afloat(cache_v[vb + c]);
    m = m_new;
  }
#ifdef RILL_NO_SUBGROUP_ARITHMETIC
  // Every query row has at least its own key, so m_all is finite.
  const afloat m_all = rill_workgroup_max(m);
  const afloat w = m == -1.0 / 0.0 ? 0.0 : exp(m - m_all);
  const afloat l_all = rill_workgroup_sum(l * w);
  [[unroll]] for (uint c0 = 0; c0 < DV; c0 += CHANNELS) {
    [[unroll]] for (uint j = 0; j < CHANNELS; ++j)
      if (c0 + j < DV) sh_channels[j * WG_SIZE + lid] = acc[c0 + j] * w;
    barrier();  // channels written -> summed
    for (uint j = lid; j < CHANNELS && c0 + j < DV; j += WG_SIZE) {
      afloat sum = 0.0;
      for (uint g = 0; g < WG_SIZE; ++g) sum += sh_channels[j * WG_SIZE + g];
      o[(h * p.nq + r) * DV + c0 + j] = to_sfloat(sum / l_all);
    }
    barrier();  // summed -> the next channels overwrite them
  }
#else
  // Merge within the subgroup (an invocation without keys has m = -inf and weighs nothing).
  const afloat m_sg = subgroupMax(m);
  const afloat w = m == -1.0 / 0.0 ? 0.0 : exp(m - m_sg);
  const afloat l_sg = subgroupAdd(l * w);
  [[unroll]] for (uint c = 0; c < DV; ++c) acc[c] = subgroupAdd(acc[c] * w);
  if (gl_NumSubgroups == 1) {
    if (subgroupElect()) {
      [[unroll]] for (uint c = 0; c < DV; ++c) o[(h * p.nq + r) * DV + c] = to_sfloat(acc[c] / l_sg);
    }
    return;
  }
  // Across subgroups.
  if (subgroupElect()) {
    sh_m[gl_SubgroupID] = m_sg;
    sh_l[gl_SubgroupID] = l_sg;
    [[unroll]] for (uint c = 0; c < DV; ++c) sh_acc[gl_SubgroupID * DV + c] = acc[c];
  }
  barrier();
  afloat m_all = -1.0 / 0.0;
  for (uint g = 0; g < gl_NumSubgroups; ++g) m_all = max(m_all, sh_m[g]);
  afloat l_all = 0.0;
  for (uint g = 0; g < gl_NumSubgroups; ++g) l_all += sh_m[g] == -1.0 / 0.0 ? 0.0 : sh_l[g] * exp(sh_m[g] - m_all);
  for (uint c = lid; c < DV; c += WG_SIZE) {
    afloat sum = 0.0;
    for (uint g = 0; g < gl_NumSubgroups; ++g)
      if (sh_m[g] != -1.0 / 0.0) sum += sh_acc[g * DV + c] * exp(sh_m[g] - m_all);
    o[(h * p.nq + r) * DV + c] = to_sfloat(sum / l_all);
  }
#endif
}
