// Matmul with a packed B (B_INT8, B_INT4 or B_F16) and few rows of A (a decoding step): C[M x N],
// M <= ROWS. Each invocation owns WORDS word columns of B (8 int4, 4 int8 or 2 f16 columns each,
// spaced by the workgroup so that adjacent invocations read adjacent words) and walks K once: every
// word is read once, and int8 and int4 sums are scaled once per group of rows instead of once per
// element. No shared memory, no barriers.
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 4) const uint ROWS = 1;
layout(constant_id = 5) const uint WORDS = 1;  // word columns per invocation (each k's A value serves them all)
layout(local_size_x_id = 0) in;

#include "matmul_common.glsl"

const uint PER_WORD = PACKED_PER_WORD;

void unpack(uint word, out float w[PER_WORD]) {
#if defined(B_SCALED)
  [[unroll]] for (uint c = 0; c < PER_WORD; ++c)
    w[c] = float(bitfieldExtract(int(word), int(PACKED_BITS * c), int(PACKED_BITS)));
#else
  const vec2 pair = rill_unpack_half2(word);
  w[0] = pair.x;
  w[1] = pair.y;
#endif
}

void main() {
  const uint batch = gl_WorkGroupID.z;
  const uint j0 = gl_WorkGroupID.x * WG * WORDS + gl_LocalInvocationID.x;
  if (j0 >= p.b_rs) return;
  uint cols[WORDS];  // word columns, clamped: out-of-range ones are computed but never stored
  [[unroll]] for (uint w = 0; w < WORDS; ++w) cols[w] = min(j0 + w * WG, p.b_rs - 1);
  const uint a_base = batch * p.a_bs, word_base = batch * p.b_bs;
  float acc[ROWS][WORDS * PER_WORD];
  [[unroll]] for (uint m = 0; m < ROWS; ++m)
    [[unroll]] for (uint c = 0; c < WORDS * PER_WORD; ++c) acc[m][c] = 0.0;
#if defined(B_SCALED)
  const uint group = p.b_group;
#else
  const uint group = p.K;  // no scales: one pass
#endif
  for (uint k0 = 0; k0 < p.K; k0 += group) {
    float part[ROWS][WORDS * PER_WORD];
    [[unroll]] for (uint m = 0; m < ROWS; ++m)
      [[unroll]] for (uint c = 0; c < WORDS * PER_WORD; ++c) part[m][c] = 0.0;
    const uint k1 = min(k0 + group, p.K);
    for (uint k = k0; k < k1; ++k) {
      float a_k[ROWS];
      [[unroll]] for (uint m = 0; m < ROWS; ++m) a_k[m] = load_a(a_base, min(m, p.M - 1), k);
      [[unroll]] for (uint w = 0; w < WORDS; ++w) {
        float v[PER_WORD];
        unpack(pw_words[word_base + k * p.b_rs + cols[w]], v);
        [[unroll]] for (uint m = 0; m < ROWS; ++m)
          [[unroll]] for (uint c = 0; c < PER_WORD; ++c)
            part[m][w * PER_WORD + c] = fma(a_k[m], v[c], part[m][w * PER_WORD + c]);
      }
    }
    [[unroll]] for (uint w = 0; w < WORDS; ++w)
      [[unroll]] for (uint c = 0; c < PER_WORD; ++c) {
#if defined(B_SCALED)
        const float scale = pw_scales[batch * p.s_bs + (k0 / group) * p.N + min(cols[w] * PER_WORD + c, p.N - 1)];
#else
        const float scale = 1.0;
#endif
        [[unroll]] for (uint m = 0; m < ROWS; ++m)
          acc[m][w * PER_WORD + c] = fma(part[m][w * PER_WORD + c], scale, acc[m][w * PER_WORD + c]);
      }
  }
  const uint c_base = batch * p.c_bs;
  [[unroll]] for (uint w = 0; w < WORDS; ++w) {
    if (j0 + w * WG >= p.b_rs) break;
    [[unroll]] for (uint m = 0; m < ROWS; ++m) {
      if (m >= p.M) break;
      [[unroll]] for (uint c = 0; c < PER_WORD; ++c) {
        const uint n = (j0 + w * WG) * PER_WORD + c;
        if (n < p.N) store_c(c_base, m, n, acc[m][w * PER_WORD + c]);
      }
    }
  }
}
