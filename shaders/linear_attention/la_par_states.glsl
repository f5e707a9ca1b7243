// Parallel chunked linear attention, pass 1 of 3 (la_par_common.glsl has the form; la_par_scan.comp
// is pass 2, la_par_output.glsl pass 3): every chunk's own state, all chunks at once. Workgroup
// (c, bh) takes chunk c of the window of head bh, its mapped positions t0 .. t0 + len - 1:
//   U_c = sum_{s < len} lambda^(len-1-s) g(b_{t0+s})^T h(c_{t0+s})         [DK, DV], f32
// into chunk_states[(bh * window + c) * DK * DV ...]; the scan turns U_c into the state before
// chunk c. Invocations own elements (i, j); neighbouring invocations take neighbouring j, so the c
// loads are coalesced and the b loads shared.
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer B { sfloat b[]; };
layout(std430, binding = 1) readonly buffer C { sfloat c[]; };
layout(std430, binding = 2) readonly buffer Decay { float decay[]; };
layout(std430, binding = 3) writeonly buffer ChunkStates { float chunk_states[]; };

shared afloat weight[CHUNK];  // lambda^(len-1-s)

void main() {
  const uint chunk = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint t0 = (p.first_chunk + chunk) * CHUNK;
  const uint len = min(CHUNK, p.n - t0);  // the dispatch covers whole chunks below n only
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  for (uint s = tid; s < len; s += WG_SIZE) weight[s] = HAS_DECAY ? pow(lambda, afloat(len - 1 - s)) : 1.0;
  barrier();  // weights written -> read by every element owner
  const uint b_base = bh * p.n * p.dk, c_base = bh * p.n * p.dv;
  const uint out_base = (bh * p.window + chunk) * p.dk * p.dv;
  for (uint e = tid; e < p.dk * p.dv; e += WG_SIZE) {
    const uint i = e / p.dv, j = e % p.dv;
    afloat acc = 0.0;
    for (uint s = 0; s < len; ++s) {
      const uint row = la_row(t0 + s);
      acc += weight[s] * la_f(PHI_B, afloat(b[b_base + row * p.dk + i])) * la_f(PHI_C, afloat(c[c_base + row * p.dv + j]));
    }
    chunk_states[out_base + e] = acc;
  }
}
