// Shared pieces of the parallel chunked linear-attention passes (la_par_states.glsl,
// la_par_scan.comp, la_par_output.glsl). They compute one generalised causal form,
//   out_t = sum_{s<=t} lambda^(t-s) (f(a_t) . g(b_s)) h(c_s)          a, b [N, DK]; c, out [N, DV]
// where f, g, h are the feature map phi or the identity (PHI_A, PHI_B, PHI_C) and "s <= t" runs
// forward in time, or backward with REVERSE (t, s index positions n-1-t, n-1-s). The forward is
// a = q, b = k, c = v with phi on a and b; the backward's three gradients are the same form with
// the operands exchanged (linear_attention.cpp). Chunk c of a window covers (mapped) positions
// (first_chunk + c) * CHUNK ... + len - 1.
layout(constant_id = 3) const uint CHUNK = 64;
layout(constant_id = 5) const bool PHI_A = true;
layout(constant_id = 6) const bool PHI_B = true;
layout(constant_id = 7) const bool PHI_C = false;
layout(constant_id = 8) const bool REVERSE = false;
// Rows (or inner-dimension slices) staged in shared memory per step of the tiled passes; head
// dimensions up to MAX_D (the plan sends wider heads to the serial kernel). Each invocation
// accumulates a 4 x 4 block of outputs in registers: 4 neighbouring rows, and 4 columns strided by
// the number of column groups, so that a warp's neighbouring invocations read neighbouring words of
// the shared tiles (4 neighbouring columns put 16 invocations in one of 32 banks).
layout(constant_id = 10) const uint TILE = 16;
#define MAX_D 128u
// The head widths (<= MAX_D), fixed per pipeline rather than read from the push constants: the tile
// loops map each element index to a row and a column, and a division by a constant is a shift or a
// multiplication where a division by a runtime value is a sequence of about twenty instructions per
// element on a GPU (more than the element's share of the products in the passes' tile steps).
layout(constant_id = 14) const uint DK = 64;
layout(constant_id = 15) const uint DV = 64;
// Chunks per span. SPAN 1: la_par_states writes each chunk's own state U_c and the scan turns
// every one into the state before its chunk. SPAN > 1: a states workgroup walks a span of SPAN
// chunks, keeping the span's state in registers; it writes (causal) each chunk's state before it
// within the span, L_c, and the span's total at states_base; the scan then walks spans, not chunks
// (SPAN times less memory traffic: every chunk state is written once and read once, not read and
// written again by the scan), and the output pass reads P_c = L_c + lambda^(positions since the
// span's start) times the state before the span.
layout(constant_id = 16) const uint SPAN = 1;

#include "la_common.glsl"

#include "contract/attention.glsl"
layout(push_constant) uniform PushBlock { LaWindowPush p; };

// The spans of the window (its chunks, SPAN 1).
uint spans_in_window() { return (p.window + SPAN - 1u) / SPAN; }

// The storage row of (mapped) position t.
uint la_row(uint t) { return REVERSE ? p.n - 1u - t : t; }
afloat la_f(bool use_phi, afloat x) { return use_phi ? phi(x) : x; }
