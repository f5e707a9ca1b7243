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
  for (uint c = 0; c < p.window; ++c) {
    const uint t0 = (p.first_chunk + c) * CHUNK, len = min(CHUNK, p.n - t0);
    const uint at = (bh * p.window + c) * elements + e;
    const afloat own = chunk_states[at];
    chunk_states[at] = carry;
    const afloat decay_len = len == CHUNK ? full_carry : (HAS_DECAY ? pow(lambda, afloat(len)) : 1.0);
    carry = decay_len * carry + own;
  }
  S[bh * elements + e] = carry;
}
