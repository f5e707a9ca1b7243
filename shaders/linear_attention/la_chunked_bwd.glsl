// Chunked causal linear attention, backward. With a[t][s] = lambda^(t-s) (do_t . v_s) and
// b[t][s] = lambda^(t-s) (phi(q_t) . phi(k_s)) for s <= t:
//   g_q[t] = sum_{s<=t} a[t][s] phi(k_s)      dq = g_q * phi'(q)
//   g_k[s] = sum_{t>=s} a[t][s] phi(q_t)      dk = g_k * phi'(k)
//   dv[s]  = sum_{t>=s} b[t][s] do_t
// Each is a scan over chunks with a Dk x Dv state, like the forward:
//   MODE 0 (dq, forward in time):  S = sum_{s<t0} lambda^(t0-1-s) phi(k_s) v_s^T, rows owned
//   MODE 1 (dk, backward in time): R = sum_{t>=t1} lambda^(t-t1) phi(q_t) do_t^T, rows owned
//   MODE 2 (dv, backward in time): the same R, columns owned
// where [t0, t1) is the chunk. Without CAUSAL the states are the full sums (S = phi(K)^T V, made by
// the forward kernel's state pass; R = phi(Q)^T dO, made by MODE 3) and each gradient is the
// inter-chunk term alone: dq_t = S do_t, dk_s = R v_s, dv_s = R^T phi(k_s). Each invocation owns whole rows (or columns) of its state, so the
// state needs no synchronisation; the chunk's a or b scores go through shared memory.
layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 3) const uint CHUNK = 64;
layout(constant_id = 4) const uint MODE = 0;
layout(constant_id = 5) const bool CAUSAL = true;
layout(local_size_x_id = 0) in;

#include "la_common.glsl"

layout(std430, binding = 0) readonly buffer Q { sfloat q[]; };
layout(std430, binding = 1) readonly buffer K { sfloat k[]; };
layout(std430, binding = 2) readonly buffer V { sfloat v[]; };
layout(std430, binding = 3) readonly buffer Do { sfloat dout[]; };
layout(std430, binding = 4) readonly buffer Decay { float decay[]; };
layout(std430, binding = 5) buffer State { float S[]; };
layout(std430, binding = 6) writeonly buffer Grad { sfloat grad[]; };
#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaChunkPush p; };

shared afloat scores[CHUNK * CHUNK];

afloat fq(uint qk, uint t, uint i) { return phi(afloat(q[qk + t * p.dk + i])); }
afloat fk(uint qk, uint t, uint i) { return phi(afloat(k[qk + t * p.dk + i])); }

// S row i <- lambda^len S + sum_s lambda^(len-1-s) phi(k_s)[i] v_s  (forward in time)
void update_s_row(uint sb, uint qk, uint vo, uint t0, uint len, uint i, afloat lambda) {
  const afloat carry = HAS_DECAY ? decay_pow(lambda, afloat(len)) : 1.0;
  for (uint j = 0; j < p.dv; ++j) {
    afloat acc = carry * S[sb + i * p.dv + j];
    for (uint s = 0; s < len; ++s) {
      afloat w = fk(qk, t0 + s, i) * afloat(v[vo + (t0 + s) * p.dv + j]);
      if (HAS_DECAY) w *= decay_pow(lambda, afloat(len - 1 - s));
      acc += w;
    }
    S[sb + i * p.dv + j] = acc;
  }
}

// R element (i, j) <- lambda^len R + sum_t lambda^t phi(q_t)[i] do_t[j]  (backward in time)
void update_r(uint sb, uint qk, uint vo, uint t0, uint len, uint i, uint j, afloat carry, afloat lambda) {
  afloat acc = carry * S[sb + i * p.dv + j];
  for (uint t = 0; t < len; ++t) {
    afloat w = fq(qk, t0 + t, i) * afloat(dout[vo + (t0 + t) * p.dv + j]);
    if (HAS_DECAY) w *= decay_pow(lambda, afloat(t));
    acc += w;
  }
  S[sb + i * p.dv + j] = acc;
}

void main() {
  const uint bh = gl_WorkGroupID.x;
  const uint tid = gl_LocalInvocationID.x;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint qk = bh * p.n * p.dk, vo = bh * p.n * p.dv, sb = bh * p.dk * p.dv;
  // Causal scans run while producing gradients; non-causal gradients only read the full state.
  const bool update = CAUSAL || MODE == kLaBackwardState;
  for (uint step = 0; step < p.chunk_count; ++step) {
    const uint c = MODE == kLaBackwardDq ? p.first_chunk + step : p.first_chunk + p.chunk_count - 1 - step;
    const uint t0 = c * CHUNK;
    if (t0 >= p.n) continue;  // uniform across the workgroup
    const uint len = min(CHUNK, p.n - t0);
    if (CAUSAL && MODE != kLaBackwardState) {
      for (uint e = tid; e < len * len; e += WG_SIZE) {
        const uint t = e / len, s = e % len;
        afloat x = 0.0;
        if (s <= t) {
          if (MODE == kLaBackwardDv) {
            for (uint i = 0; i < p.dk; ++i) x += fq(qk, t0 + t, i) * fk(qk, t0 + s, i);
          } else {
            for (uint j = 0; j < p.dv; ++j) x += afloat(dout[vo + (t0 + t) * p.dv + j]) * afloat(v[vo + (t0 + s) * p.dv + j]);
          }
          if (HAS_DECAY) x *= decay_pow(lambda, afloat(t - s));
        }
        scores[t * CHUNK + s] = x;
      }
    }
    barrier();  // scores written -> read by every row or column owner
    const afloat carry = HAS_DECAY ? decay_pow(lambda, afloat(len)) : 1.0;
    if (MODE == kLaBackwardDq) {
      for (uint i = tid; i < p.dk; i += WG_SIZE) {
        for (uint t = 0; t < len; ++t) {
          afloat inter = 0.0;
          for (uint j = 0; j < p.dv; ++j) inter += afloat(dout[vo + (t0 + t) * p.dv + j]) * S[sb + i * p.dv + j];
          afloat g = HAS_DECAY ? inter * decay_pow(lambda, afloat(t + 1)) : inter;
          if (CAUSAL)
            for (uint s = 0; s <= t; ++s) g += scores[t * CHUNK + s] * fk(qk, t0 + s, i);
          grad[qk + (t0 + t) * p.dk + i] = to_sfloat(g * phi_grad(afloat(q[qk + (t0 + t) * p.dk + i])));
        }
        if (update) update_s_row(sb, qk, vo, t0, len, i, lambda);
      }
    } else if (MODE == kLaBackwardDk || MODE == kLaBackwardState) {
      for (uint i = tid; i < p.dk; i += WG_SIZE) {
        for (uint s = 0; s < len && MODE == kLaBackwardDk; ++s) {
          afloat inter = 0.0;
          for (uint j = 0; j < p.dv; ++j) inter += S[sb + i * p.dv + j] * afloat(v[vo + (t0 + s) * p.dv + j]);
          afloat g = HAS_DECAY ? inter * decay_pow(lambda, afloat(len - s)) : inter;
          if (CAUSAL)
            for (uint t = s; t < len; ++t) g += scores[t * CHUNK + s] * fq(qk, t0 + t, i);
          grad[qk + (t0 + s) * p.dk + i] = to_sfloat(g * phi_grad(afloat(k[qk + (t0 + s) * p.dk + i])));
        }
        if (update)
          for (uint j = 0; j < p.dv; ++j) update_r(sb, qk, vo, t0, len, i, j, carry, lambda);
      }
    } else {
      for (uint j = tid; j < p.dv; j += WG_SIZE) {
        for (uint s = 0; s < len; ++s) {
          afloat inter = 0.0;
          for (uint i = 0; i < p.dk; ++i) inter += fk(qk, t0 + s, i) * S[sb + i * p.dv + j];
          afloat g = HAS_DECAY ? inter * decay_pow(lambda, afloat(len - s)) : inter;
          if (CAUSAL)
            for (uint t = s; t < len; ++t) g += scores[t * CHUNK + s] * afloat(dout[vo + (t0 + t) * p.dv + j]);
          grad[vo + (t0 + s) * p.dv + j] = to_sfloat(g);
        }
        if (update)
          for (uint i = 0; i < p.dk; ++i) update_r(sb, qk, vo, t0, len, i, j, carry, lambda);
      }
    }
    barrier();  // scores read -> overwritten by the next chunk
  }
}
