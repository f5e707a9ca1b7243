// Fused decoding, the first half of a layer, one workgroup per head h (one position):
//   x = resid + sum of the previous FFN's partial rows (rounded to storage; wg 0 writes it to x_out)
//   u = RMSNorm(x) * attn_gain;  q, k, v (and the output gate) = u W for this head's columns
//   o = the mixer: MIX_SOFTMAX - the key/value cache's step and softmax attention over the block
//       (BLOCK > 0, DiagAttention) or every cached position (BLOCK 0); else the linear-attention
//       state step S <- lambda S + phi(k)^T v, o = phi(q) S, with LRPE's rotation at this position
//   w = o * out_gain * gate (each when the layer has it); parts_out[h] = (w Wo[this head's rows],
//       sum of o^2): the FFN kernel adds the heads' rows and applies the output norm's 1 / rms.
// Intermediate values are rounded to storage where the per-op path stores them, so both paths
// agree to the storage type's precision.
#include "rill_common.glsl"
#include "feature_map.glsl"  // FEATURE: constant_id 1

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 2) const uint DH = 32;
layout(constant_id = 3) const uint IN_MAX = 256;   // >= width, >= 4 DH
layout(constant_id = 4) const uint OUT_MAX = 256;  // >= width, >= 4 DH
layout(constant_id = 5) const bool HAS_GAIN = true;
layout(constant_id = 6) const bool HAS_GATE = false;
layout(constant_id = 7) const bool OUT_NORM = false;
#ifdef MIX_SOFTMAX
layout(constant_id = 8) const uint BLOCK = 0;
#else
layout(constant_id = 8) const bool HAS_DECAY = false;
layout(constant_id = 9) const bool HAS_LRPE = false;
#endif
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Resid { sfloat resid[]; };
layout(std430, binding = 1) readonly buffer PartsIn { float parts_in[]; };
layout(std430, binding = 2) writeonly buffer XOut { sfloat x_out[]; };
layout(std430, binding = 3) readonly buffer AttnGain { sfloat attn_gain[]; };
layout(std430, binding = 4) readonly buffer OutGain { sfloat out_gain[]; };
layout(std430, binding = 5) writeonly buffer PartsOut { float parts_out[]; };
#ifdef MIX_SOFTMAX
layout(std430, binding = 6) buffer CacheK { sfloat cache_k[]; };  // [heads, cap, DH]
layout(std430, binding = 7) buffer CacheV { sfloat cache_v[]; };
layout(std430, binding = 8) readonly buffer Pos { uint pos[]; };
#else
layout(std430, binding = 6) buffer State { float S[]; };  // [heads, DK, DH] f32
layout(std430, binding = 7) readonly buffer Decay { float decay[]; };
layout(std430, binding = 8) readonly buffer LrpeBase { vec2 lrpe_base[]; };  // (cos, sin) at this position
#endif
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { DecodeMixPush p; };

#define WEIGHT_BINDING 9
#include "decode_common.glsl"
#include "decode_residual.glsl"
RILL_DECODE_WEIGHT(0)  // Wq [heads, width, DH]
RILL_DECODE_WEIGHT(1)  // Wk
RILL_DECODE_WEIGHT(2)  // Wv
RILL_DECODE_WEIGHT(3)  // Wgate (Wq again without the gate)
RILL_DECODE_WEIGHT(4)  // Wo
RILL_DECODE_DOT(0)
RILL_DECODE_DOT(1)
RILL_DECODE_DOT(2)
RILL_DECODE_DOT(3)
RILL_DECODE_DOT(4)

shared float o_sh[DH];
// GPUs: the mixer's per-column sums split over MIX_GROUPS invocations each (1: one invocation
// walks the whole sum, as CPU drivers' one-subgroup workgroups do), partial sums in mix_part.
const uint MIX_GROUPS = WG_SIZE / DH > 1u ? WG_SIZE / DH : 1u;
shared float mix_part[MIX_GROUPS * DH];

float input_gain(uint i) { return HAS_GAIN ? float(attn_gain[i]) : 1.0; }

float column_dot(uint phase, uint j, uint r0, uint r1) {
  const uint h = gl_WorkGroupID.x, D = p.width;
  if (phase == 1u) return dot4(0u, j, D, D, h * DH, r0, r1);  // Wo [D, D]: this head's rows
  // Wq, Wk, Wv [heads, D, DH]: this head's matrix; Wgate [D, D]: this head's columns.
  const uint m = j / DH, c = j % DH;
  if (m == 0u) return dot0(h, c, D, DH, 0u, r0, r1);
  if (m == 1u) return dot1(h, c, D, DH, 0u, r0, r1);
  if (m == 2u) return dot2(h, c, D, DH, 0u, r0, r1);
  return dot3(0u, h * DH + c, D, D, 0u, r0, r1);
}

void column_groups(uint phase, uint j, uint r0, uint r1, out vec4 res[LANE_SLOTS]) {
  const uint h = gl_WorkGroupID.x, D = p.width;
  if (phase == 1u) {
    dotg_4(0u, j, D, D, h * DH, r0, r1, res);
    return;
  }
  const uint m = j / DH, c = j % DH;  // DH is a multiple of the group under LANE_GROUPS
  if (m == 0u) dotg_0(h, c, D, DH, 0u, r0, r1, res);
  else if (m == 1u) dotg_1(h, c, D, DH, 0u, r0, r1, res);
  else if (m == 2u) dotg_2(h, c, D, DH, 0u, r0, r1, res);
  else dotg_3(0u, h * DH + c, D, D, 0u, r0, r1, res);
}

#ifdef MIX_SOFTMAX
shared float weights_sh[WG_SIZE];
shared float acc_sh[DH];

uint cache_row(uint s) { return BLOCK > 0u ? s % BLOCK : s; }

// Value j of key sk: this position's from shared memory, earlier ones from the cache.
float cached_value(uint h, uint sk, uint t, uint j) {
  return sk == t ? mv_in[2u * DH + j] : float(cache_v[(h * p.cap + cache_row(sk)) * DH + j]);
}

// Softmax attention of this position over the cache, the keys WG_SIZE at a time (an online
// softmax across tiles); invocation j owns output columns j, j + WG_SIZE, ... The new key and value are written
// to the cache and read from shared memory, never read back from the buffer in this dispatch.
void mix(uint h) {
  const uint lid = gl_LocalInvocationID.x, t = pos[0];
  const uint first = BLOCK > 0u ? t - t % BLOCK : 0u;
  for (uint i = lid; i < DH; i += WG_SIZE) {
    const float k = rill_storage_round(mv_out[DH + i]), v = rill_storage_round(mv_out[2u * DH + i]);
    mv_in[i] = rill_storage_round(mv_out[i]) * p.scale;
    mv_in[DH + i] = k;
    mv_in[2u * DH + i] = v;
    cache_k[(h * p.cap + cache_row(t)) * DH + i] = to_sfloat(k);
    cache_v[(h * p.cap + cache_row(t)) * DH + i] = to_sfloat(v);
  }
  barrier();  // q, k, v in shared memory -> read by every invocation
  float m = -1.0 / 0.0, l = 0.0;
  for (uint j = lid; j < DH; j += WG_SIZE) acc_sh[j] = 0.0;
  // Tiles walk offsets from the block's first key: a position near 2^32 would wrap s0 + WG_SIZE.
  for (uint o0 = 0u; o0 <= t - first; o0 += WG_SIZE) {
    const uint s0 = first + o0, s = s0 + lid;
    const bool in_block = o0 + lid <= t - first;  // s <= t, without the wrap
    float z = -1.0 / 0.0;
    if (in_block) {
      z = 0.0;
      if (s == t) {
        for (uint i = 0u; i < DH; ++i) z += mv_in[i] * mv_in[DH + i];
      } else {
        const uint kb = (h * p.cap + cache_row(s)) * DH;
        for (uint i = 0u; i < DH; ++i) z += mv_in[i] * float(cache_k[kb + i]);
      }
    }
    const float m_new = max(m, rill_workgroup_max(z));  // finite: key s0 <= t is in the tile
    const float e = in_block ? exp(z - m_new) : 0.0;
    weights_sh[lid] = e;
    const float keep = exp(m - m_new);
    l = l * keep + rill_workgroup_sum(e);  // its barriers also publish weights_sh
    const uint n = min(WG_SIZE, t - first + 1u - o0);
    if (MIX_GROUPS == 1u) {
      for (uint j = lid; j < DH; j += WG_SIZE) {
        float a = 0.0;
        for (uint i = 0u; i < n; ++i) a += weights_sh[i] * cached_value(h, s0 + i, t, j);
        acc_sh[j] = acc_sh[j] * keep + a;
      }
    } else {
      // MIX_GROUPS invocations per column, each over every MIX_GROUPS-th key, then summed in order.
      const uint j = lid % DH, g = lid / DH;
      if (g < MIX_GROUPS) {
        float a = 0.0;
        for (uint i = g; i < n; i += MIX_GROUPS) a += weights_sh[i] * cached_value(h, s0 + i, t, j);
        mix_part[g * DH + j] = a;
      }
      barrier();  // partial sums -> summed
      if (lid < DH) {
        float a = 0.0;
        for (uint gg = 0u; gg < MIX_GROUPS; ++gg) a += mix_part[gg * DH + lid];
        acc_sh[lid] = acc_sh[lid] * keep + a;
      }
    }
    m = m_new;
    barrier();  // weights read -> the next tile writes them
  }
  for (uint j = lid; j < DH; j += WG_SIZE) o_sh[j] = rill_storage_round(acc_sh[j] / l);
}
#else
// S[e] <- lambda S[e] + k_i v_j; returns the new value.
float state_step(uint e, float lambda, float k_i, float v_j) {
  const float s = lambda * S[e] + k_i * v_j;
  S[e] = s;
  return s;
}

// The linear-attention step; phi (and LRPE's rotation, which doubles the features) on q and k.
void mix(uint h) {
  const uint lid = gl_LocalInvocationID.x;
  const uint DK = HAS_LRPE ? 2u * DH : DH;
  for (uint i = lid; i < DH; i += WG_SIZE) {
    const float qf = phi(rill_storage_round(mv_out[i])), kf = phi(rill_storage_round(mv_out[DH + i]));
    if (HAS_LRPE) {
      const vec2 r = lrpe_base[h * DH + i];
      mv_in[i] = rill_storage_round(qf * r.x);
      mv_in[DH + i] = rill_storage_round(qf * r.y);
      mv_in[DK + i] = rill_storage_round(kf * r.x);
      mv_in[DK + DH + i] = rill_storage_round(kf * r.y);
    } else {
      mv_in[i] = qf;
      mv_in[DK + i] = kf;
    }
  }
  barrier();  // features -> the state step
  const float lambda = HAS_DECAY ? decay[h] : 1.0;
  const uint base = h * DK * DH;
  if (MIX_GROUPS == 1u) {
    for (uint j = lid; j < DH; j += WG_SIZE) {
      const float vj = rill_storage_round(mv_out[2u * DH + j]);
      float out_j = 0.0;
      for (uint i = 0u; i < DK; ++i) out_j += mv_in[i] * state_step(base + i * DH + j, lambda, mv_in[DK + i], vj);
      o_sh[j] = out_j;  // the per-op path keeps this output in f32 (it grows with the position)
    }
    return;
  }
  // MIX_GROUPS invocations per column, each stepping every MIX_GROUPS-th row of the state (its
  // loads independent, not a chain of DK), then the partial outputs summed in order.
  const uint j = lid % DH, g = lid / DH;
  if (g < MIX_GROUPS) {
    const float vj = rill_storage_round(mv_out[2u * DH + j]);
    float part = 0.0;
    for (uint i = g; i < DK; i += MIX_GROUPS) part += mv_in[i] * state_step(base + i * DH + j, lambda, mv_in[DK + i], vj);
    mix_part[g * DH + j] = part;
  }
  barrier();  // partial outputs -> summed
  if (lid < DH) {
    float out_j = 0.0;
    for (uint gg = 0u; gg < MIX_GROUPS; ++gg) out_j += mix_part[gg * DH + lid];
    o_sh[lid] = out_j;
  }
}
#endif

void main() {
  const uint h = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x, D = p.width;
  load_residual();
  if (h == 0u)
    for (uint i = lid; i < D; i += WG_SIZE) x_out[i] = to_sfloat(mv_in[i]);  // each reads what it wrote
  normalize_input();
  matvec(0u, (HAS_GATE ? 4u : 3u) * DH, D, DH);  // q, k, v (and the gate), DH columns each
  mix(h);
  barrier();  // o_sh written; the mixer's reads of mv_in done
  float ss = 0.0;
  for (uint j = lid; j < DH; j += WG_SIZE) {
    const float o = o_sh[j];
    ss += o * o;
    float w = o;
    if (OUT_NORM && HAS_GAIN) w *= float(out_gain[h * DH + j]);
    if (HAS_GATE) w *= rill_storage_round(mv_out[3u * DH + j]);
    mv_in[j] = w;
  }
  ss = rill_workgroup_sum(ss);  // its barriers also publish mv_in
  matvec(1u, D, DH, D);
  for (uint c = lid; c < D; c += WG_SIZE) parts_out[h * (D + 1u) + c] = mv_out[c];
  if (lid == 0u) parts_out[h * (D + 1u) + D] = ss;
}
