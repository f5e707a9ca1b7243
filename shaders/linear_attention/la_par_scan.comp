// Parallel chunked linear attention, pass 2 of 3 (la_par_common.glsl has the form): the scan over
// a window of chunk states, serial over the window's chunks but parallel over the heads and the
// DK x DV state elements. In place, U_c (from la_par_states) becomes the state before chunk c, and
// the state after the window goes back to `state`, where the next window (or decoding) continues:
//   P_0 = S;  P_{c+1} = lambda^len_c P_c + U_c;  S <- P_window
// Workgroup (x, bh): elements x * WG_SIZE + local id of head bh.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer Decay { float decay[]; };
layout(std430, binding = 1) buffer ChunkStates { float chunk_states[]; };
layout(std430, binding = 2) buffer State { float S[]; };

void main() {
  const uint bh = gl_WorkGroupID.y, e = gl_WorkGroupID.x * WG_SIZE + gl_LocalInvocationID.x;
  const uint elements = p.dk * p.dv;
  if (e >= elements) return;
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const afloat full_carry = HAS_DECAY ? pow(lambda, afloat(CHUNK)) : 1.0;
  afloat carry = S[bh * elements + e];
  // The loop is a chain of memory latencies, not of arithmetic: load AHEAD chunks' states before
  // writing any of them back, so a GPU waits once per AHEAD chunks instead of once per chunk.
  const uint AHEAD = 8;
  for (uint c0 = 0; c0 < p.window; c0 += AHEAD) {
    afloat own[AHEAD];
    for (uint q = 0; q < AHEAD; ++q)
      own[q] = c0 + q < p.window ? chunk_states[(bh * p.window + c0 + q) * elements + e] : 0.0;
    for (uint q = 0; q < AHEAD && c0 + q < p.window; ++q) {
      const uint c = c0 + q;
      const uint t0 = (p.first_chunk + c) * CHUNK, len = min(CHUNK, p.n - t0);
      chunk_states[(bh * p.window + c) * elements + e] = carry;
      const afloat decay_len = len == CHUNK ? full_carry : (HAS_DECAY ? pow(lambda, afloat(len)) : 1.0);
      carry = decay_len * carry + own[q];
    }
  }
  S[bh * elements + e] = carry;
}
