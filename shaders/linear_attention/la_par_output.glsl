// Parallel chunked linear attention, pass 3 of 3 (la_par_common.glsl has the form): every chunk's
// outputs at once, from the state before the chunk (P_c, left in chunk_states by la_par_scan) and
// the chunk's own positions. Workgroup (c, bh), mapped positions t0 + t for t < len:
//   out_{t0+t} = lambda^(t+1) f(a_{t0+t}) P_c + sum_{s<=t} lambda^(t-s) (f(a_{t0+t}) . g(b_{t0+s})) h(c_{t0+s})
// times phi'(x_{t0+t}) elementwise with GRAD_SCALE (the backward's dq and dk). The chunk's causal
// scores are computed once into shared memory; invocations then own outputs (t, j), neighbouring
// invocations neighbouring j (coalesced c, P and out; shared a loads).
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 9) const bool GRAD_SCALE = false;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) readonly buffer C { sfloat c[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) readonly buffer ChunkStates { float chunk_states[]; };
layout(std430, binding = 5) readonly buffer X { sfloat x[]; };  // GRAD_SCALE: phi' of x scales out
layout(std430, binding = 6) writeonly buffer Out { sfloat out_[]; };

shared afloat scores[CHUNK * CHUNK];
shared afloat power[CHUNK + 1];  // lambda^m

afloat phi_grad(afloat v) {
  if (FEATURE == 1) return v > 0.0 ? 1.0 : exp(v);
  if (FEATURE == 2) return v > 0.0 ? 1.0 : 0.0;
  return 1.0;
}

void main() {
  const uint chunk = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint t0 = (p.first_chunk + chunk) * CHUNK;
  const uint len = min(CHUNK, p.n - t0);
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const uint ab_base = bh * p.n * p.dk, c_base = bh * p.n * p.dv;
  for (uint m = tid; m <= len; m += WG_SIZE) power[m] = HAS_DECAY ? pow(lambda, afloat(m)) : 1.0;
  barrier();  // powers written -> read by the score owners
  for (uint e = tid; e < len * len; e += WG_SIZE) {
    const uint t = e / len, s = e % len;
    afloat dot = 0.0;
    if (s <= t) {
      const uint row_t = la_row(t0 + t), row_s = la_row(t0 + s);
      for (uint i = 0; i < p.dk; ++i)
        dot += la_f(PHI_A, afloat(a[ab_base + row_t * p.dk + i])) * la_f(PHI_B, afloat(b[ab_base + row_s * p.dk + i]));
      dot *= power[t - s];
    }
    scores[t * CHUNK + s] = dot;
  }
  barrier();  // scores written -> read by every output owner
  const uint state_base = (bh * p.window + chunk) * p.dk * p.dv;
  for (uint e = tid; e < len * p.dv; e += WG_SIZE) {
    const uint t = e / p.dv, j = e % p.dv, row_t = la_row(t0 + t);
    afloat inter = 0.0;
    for (uint i = 0; i < p.dk; ++i)
      inter += la_f(PHI_A, afloat(a[ab_base + row_t * p.dk + i])) * chunk_states[state_base + i * p.dv + j];
    afloat val = power[t + 1] * inter;
    for (uint s = 0; s <= t; ++s) val += scores[t * CHUNK + s] * la_f(PHI_C, afloat(c[c_base + la_row(t0 + s) * p.dv + j]));
    if (GRAD_SCALE) val *= phi_grad(afloat(x[c_base + row_t * p.dv + j]));
    out_[c_base + row_t * p.dv + j] = sfloat(val);
  }
}
