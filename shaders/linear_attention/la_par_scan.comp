// Parallel chunked linear attention, pass 2 of 3 (la_par_common.glsl has the form): the scan over
// a window of chunk states, parallel over the heads and the DK x DV state elements. In place, U_c
// (from la_par_states) becomes the state before chunk c, and the state after the window goes back
// to `state`, where the next window (or decoding) continues:
//   P_0 = S;  P_{c+1} = lambda^len_c P_c + U_c;  S <- P_window
// A serial walk over the window's chunks is a chain of memory latencies (1024 of them for a 64K
// window). With GROUPS > 1 the window is cut into GROUPS runs of chunks, scanned in three steps:
//   1. each run from zero, in parallel (U_c <- its run's prefix; the run's total and decay kept);
//   2. the runs' starting states, one short walk over the runs from S;
//   3. each run again, adding its start decayed to each chunk: U_c += lambda^(positions since the
//      run's start) start.
// That is 2 W / GROUPS + GROUPS steps in a row instead of W (the sums grouped differently: the
// same result up to rounding, the same bits on every run). Workgroup (x, bh): EPW = WG_SIZE /
// GROUPS neighbouring elements of head bh, invocation (element e, run g) at e + EPW g.
// Over the spans of la_par_states (SPAN > 1 in la_par_common.glsl) the same walk runs with a span
// as its "chunk": CHUNK = SPAN chunks' positions, the window counted in spans from states_base.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 13) const uint GROUPS = 1;  // runs of chunks (a power of two, WG_SIZE / GROUPS >= 1)
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer Decay { float decay[]; };
layout(std430, binding = 1) buffer ChunkStates { float chunk_states[]; };
layout(std430, binding = 2) buffer State { float S[]; };

const uint EPW = WG_SIZE / GROUPS;       // elements per workgroup
shared afloat run_total[WG_SIZE];        // [g][e]: run g's total from zero, then its start
shared afloat run_decay[GROUPS];         // lambda^(positions of run g)

afloat lambda;

// lambda^len of chunk c's positions (the sequence's last chunk may be short).
afloat chunk_decay(uint c, afloat full) {
  const uint t0 = (p.first_chunk + c) * CHUNK, len = min(CHUNK, p.n - t0);
  return len == CHUNK ? full : (HAS_DECAY ? decay_pow(lambda, afloat(len)) : 1.0);
}

// Chunks [c_begin, c_end) of element e in place, from `carry`: U_c <- carry before chunk c (plus
// `add` decayed from the walk's start with ADD); returns the carry after the last.
const uint AHEAD = 8;  // states loaded before any is written back: one wait per AHEAD chunks
afloat walk(uint base, uint elements, uint c_begin, uint c_end, afloat carry, afloat full, bool add_start,
            afloat start) {
  afloat since = 1.0;  // lambda^(positions from c_begin to chunk c)
  for (uint c0 = c_begin; c0 < c_end; c0 += AHEAD) {
    afloat own[AHEAD];
    for (uint q = 0; q < AHEAD; ++q) own[q] = c0 + q < c_end ? chunk_states[base + (c0 + q) * elements] : 0.0;
    for (uint q = 0; q < AHEAD && c0 + q < c_end; ++q) {
      const afloat d = chunk_decay(c0 + q, full);
      if (add_start) {
        chunk_states[base + (c0 + q) * elements] = own[q] + since * start;
      } else {
        chunk_states[base + (c0 + q) * elements] = carry;
        carry = d * carry + own[q];
      }
      since *= d;
    }
  }
  return add_start ? since : carry;  // step 3 has no carry; it returns the run's decay
}

void main() {
  const uint bh = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
  const uint elements = p.dk * p.dv;
  lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  const afloat full = HAS_DECAY ? decay_pow(lambda, afloat(CHUNK)) : 1.0;
  if (GROUPS == 1) {
    const uint e = gl_WorkGroupID.x * WG_SIZE + lid;
    if (e >= elements) return;
    const uint base = p.states_base + bh * p.window * elements + e;
    S[bh * elements + e] = walk(base, elements, 0, p.window, S[bh * elements + e], full, false, 0.0);
    return;
  }
  // Every invocation reaches the barriers; those past the last element only keep them company.
  const uint e = gl_WorkGroupID.x * EPW + lid % EPW, g = lid / EPW;
  const bool in_range = e < elements;
  const uint base = p.states_base + bh * p.window * elements + min(e, elements - 1);
  const uint per = (p.window + GROUPS - 1) / GROUPS;
  const uint c_begin = min(g * per, p.window), c_end = min(c_begin + per, p.window);
  // 1. Each run from zero.
  if (in_range) run_total[lid] = walk(base, elements, c_begin, c_end, 0.0, full, false, 0.0);
  if (lid < GROUPS) {
    afloat d = 1.0;
    const uint b = min(lid * per, p.window), end = min(b + per, p.window);
    for (uint c = b; c < end; ++c) d *= chunk_decay(c, full);
    run_decay[lid] = d;
  }
  barrier();  // run totals and decays -> the walk over the runs
  // 2. The runs' starts, in order from the window's incoming state.
  if (g == 0 && in_range) {
    afloat carry = S[bh * elements + e];
    for (uint r = 0; r < GROUPS; ++r) {
      const afloat total = run_total[r * EPW + lid];
      run_total[r * EPW + lid] = carry;
      carry = run_decay[r] * carry + total;
    }
    S[bh * elements + e] = carry;
  }
  barrier();  // starts -> step 3
  // 3. Each run's start, decayed, added to its prefixes (run 0 starts from S itself).
  if (in_range) walk(base, elements, c_begin, c_end, 0.0, full, true, run_total[lid]);
}
