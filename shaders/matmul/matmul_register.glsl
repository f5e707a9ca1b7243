// Matmul with register tiles and no shared memory or barriers (the CPU-driver variant).
// Lavapipe runs a workgroup's invocations as the lanes of SIMD registers; a load from a storage
// buffer costs a loop over the lanes, while moving values between lanes (subgroupShuffle) is a
// register shuffle. So loads are minimised and spread over lanes: a workgroup is one subgroup of
// SG lanes that computes TM rows x (SG * TN) columns of C. Per SG steps of k, lane l loads
// A[row][k + l] for each row (one load serves SG k steps after shuffling) and B[k][col] for its
// own columns (one load serves TM rows).
// The accumulators (TM x TN per lane) do not fit in registers; the SG k steps of one row run
// back to back on that row's TN accumulators, so each spilled accumulator is read and written once
// per SG steps instead of once per step (1.4-1.5x on lavapipe at TN = 8).
// FOLD_BATCH: A is one matrix shared by every batch (a_bs = 0), so the batches' columns sit side
// by side as one wide C (column j: batch j / N, column j % N). The per-head projections of a
// language model (N = 32) then fill whole tiles; a lane's batch only moves its B and C addresses.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 0) const uint SG = 8;    // workgroup size = the device's subgroup size (4..32)
layout(constant_id = 1) const uint WG_Y = 1;  // kept for the shared interface; must be 1
layout(constant_id = 4) const uint TM = 16;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const bool FOLD_BATCH = false;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

#include "matmul_common.glsl"

afloat acc[TM][TN];
#ifdef RILL_MATMUL_TEXEL
// The texel form (matmul_tx_*; A and B untransposed, K a multiple of 4 SG, N and TN of 4):
// a lane owns TN adjacent columns and reads its rows of B as TN / 4 texels, and reads A as texels
// too: lane l holds k0 + 4l .. 4l + 3 of each row for 4 SG steps of k. On lavapipe a texel fetch
// gathers every lane's 16 bytes at once, where a storage-buffer load loops over the lanes for each
// element (the loads, not the FMAs, were most of the register kernel's time). The k steps of a
// row then run in the order of the texels' components: k0 + s, k0 + 4 + s, ... for s = 0..3 (the
// same sums in another order; the same order on every run).
// A packed B (B_INT8, B_INT4, B_F16; N a multiple of 4 words, so every row starts a texel) is read
// as texels of 4 words: a lane's TN columns are WL words of each row, whole texels, the half of one
// that b_high picks (WL = 2) or the word b_word_in_texel picks (WL = 1, int4's 8 columns); int8's
// and int4's scales are the same over each block of 4 SG k steps (the plan's condition on the
// group), read once per block as texels of 4 columns.
const uint TX = TN / 4u;
vec4 a4v[TM];  // this lane's texel of each row for the current 4 SG steps of k
#if defined(B_PACKED)
#include "half_bits.glsl"
const uint PER_WORD = PACKED_PER_WORD;
#ifdef B_SCALED
vec4 scale4v[TX];  // this lane's columns' scales for the current 4 SG steps of k
#endif
const uint WL = TN / PER_WORD;
bool b_high;           // WL = 2: this lane's words are the texel's z and w
uint b_word_in_texel;  // WL = 1: which of the texel's words is this lane's

// This lane's TN values of B's row that starts at texel `at`, as TX vec4s.
#define LOAD_B_ROW(row, at)                                                                     \
  {                                                                                             \
    uint w_[WL];                                                                                \
    if (WL == 1u) {                                                                             \
      const uvec4 t_ = texelFetch(bw4, int(at));                                                \
      w_[0] = b_word_in_texel < 2u ? (b_word_in_texel == 0u ? t_.x : t_.y)                      \
                                   : (b_word_in_texel == 2u ? t_.z : t_.w);                     \
    } else if (WL == 2u) {                                                                      \
      const uvec4 t_ = texelFetch(bw4, int(at));                                                \
      [[unroll]] for (uint e_ = 0; e_ < 2u; ++e_) w_[e_] = b_high ? t_[e_ + 2u] : t_[e_];       \
    } else {                                                                                    \
      [[unroll]] for (uint q_ = 0; q_ < WL / 4u; ++q_) {                                        \
        const uvec4 t_ = texelFetch(bw4, int((at) + q_));                                       \
        [[unroll]] for (uint e_ = 0; e_ < 4u; ++e_) w_[4u * q_ + e_] = t_[e_];                   \
      }                                                                                         \
    }                                                                                           \
    [[unroll]] for (uint t_ = 0; t_ < TX; ++t_) row[t_] = b_texel(w_, t_);                      \
  }
#if defined(B_INT8)
// The word's four bytes, sign-extended by the arithmetic shift, times their columns' scales.
#define b_texel(w, t) (vec4((ivec4(int(w[t])) << ivec4(24, 16, 8, 0)) >> 24) * scale4v[t])
#elif defined(B_INT4)
// Half a word's eight nibbles (t even: the low four), sign-extended the same way, times their scales.
#define b_texel(w, t)                                                                                        \
  (vec4((ivec4(int(w[(t) / 2u])) << (((t) % 2u) == 0u ? ivec4(28, 24, 20, 16) : ivec4(12, 8, 4, 0))) >> 28) * \
   scale4v[t])
#else
#define b_texel(w, t) vec4(rill_unpack_half2(w[2u * (t)]), rill_unpack_half2(w[2u * (t) + 1u]))
#endif
#else
#define LOAD_B_ROW(row, at) \
  [[unroll]] for (uint t_ = 0; t_ < TX; ++t_) row[t_] = texelFetch(b4, int((at) + t_));
#endif

// Component s of the texels, SG steps of k: k0 + 4 j + s from lane j.
void texel_block(uint b_row0, uint b_stride, uint s) {
  vec4 bk[SG][TX];
  [[unroll]] for (uint j = 0; j < SG; ++j) LOAD_B_ROW(bk[j], b_row0 + (4u * j + s) * b_stride);
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    afloat r[TN];
    [[unroll]] for (uint c = 0; c < TN; ++c) r[c] = acc[i][c];
    const afloat a_own = a4v[i][s];
    [[unroll]] for (uint j = 0; j < SG; ++j) {
      const afloat a_ik = subgroupShuffle(a_own, j);
      [[unroll]] for (uint t = 0; t < TX; ++t)
        [[unroll]] for (uint e = 0; e < 4u; ++e) r[4u * t + e] = fma(a_ik, bk[j][t][e], r[4u * t + e]);
    }
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = r[c];
  }
}

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint n0 = (gl_WorkGroupID.x * SG + lane) * TN;  // this lane's first column
  const uint columns = FOLD_BATCH ? p.N * p.batches : p.N;
  const uint a_base = FOLD_BATCH ? 0 : gl_WorkGroupID.z * p.a_bs;
  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = 0.0;
  // Lanes past the last column read the last TN columns and store nothing (N is a multiple of TN,
  // so a lane's columns lie in one batch).
  const uint load_col = min(n0, columns - TN);
  const uint batch = FOLD_BATCH ? load_col / p.N : gl_WorkGroupID.z;
  const uint col = FOLD_BATCH ? load_col % p.N : load_col;  // in its batch's matrix
#if defined(B_PACKED)
  // b_bs and b_rs are whole texels of words (N a multiple of 4 words).
  const uint b_word = batch * p.b_bs + col / PER_WORD;
  b_high = b_word % 4u >= 2u;
  b_word_in_texel = b_word % 4u;
  const uint b_first = b_word / 4u, b_stride = p.b_rs / 4u;
#else
  const uint b_first = (batch * p.b_bs + col) / 4u, b_stride = p.b_rs / 4u;
#endif
  for (uint k0 = 0; k0 < p.K; k0 += 4u * SG) {
    [[unroll]] for (uint i = 0; i < TM; ++i)
      a4v[i] = texelFetch(a4, int((a_base + min(m0 + i, p.M - 1) * p.a_rs + k0) / 4u + lane));
#ifdef B_SCALED
    const uint scale_first = (batch * p.s_bs + (k0 / p.b_group) * p.N + col) / 4u;
    [[unroll]] for (uint t = 0; t < TX; ++t) scale4v[t] = texelFetch(scales4, int(scale_first + t));
#endif
    const uint b_row0 = b_first + k0 * b_stride;
    for (uint s = 0; s < 4u; ++s) texel_block(b_row0, b_stride, s);
  }
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= p.M) break;
    [[unroll]] for (uint c = 0; c < TN; ++c) {
      const uint col = n0 + c;
      if (col < columns) store_c((FOLD_BATCH ? col / p.N : gl_WorkGroupID.z) * p.c_bs, m, FOLD_BATCH ? col % p.N : col, acc[i][c]);
    }
  }
}
#else
afloat av[TM];
uint col_batch[TN], col_n[TN];  // this lane's columns: batch and column within it (clamped)

// One k step (a partial block of k): row values from lane j of av, this lane's B values of row k.
void k_step(uint k, uint j) {
  afloat bv[TN];
  [[unroll]] for (uint c = 0; c < TN; ++c) bv[c] = load_b(col_batch[c], k, col_n[c]);
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const afloat a_ik = subgroupShuffle(av[i], j);
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = fma(a_ik, bv[c], acc[i][c]);
  }
}

// A whole block of SG k steps: B's SG rows first, then row by row.
void k_block(uint k0) {
  afloat bk[SG][TN];
  [[unroll]] for (uint j = 0; j < SG; ++j)
    [[unroll]] for (uint c = 0; c < TN; ++c) bk[j][c] = load_b(col_batch[c], k0 + j, col_n[c]);
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    afloat r[TN];
    [[unroll]] for (uint c = 0; c < TN; ++c) r[c] = acc[i][c];
    [[unroll]] for (uint j = 0; j < SG; ++j) {
      const afloat a_ik = subgroupShuffle(av[i], j);
      [[unroll]] for (uint c = 0; c < TN; ++c) r[c] = fma(a_ik, bk[j][c], r[c]);
    }
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = r[c];
  }
}

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint n0 = gl_WorkGroupID.x * SG * TN + lane;
  const uint columns = FOLD_BATCH ? p.N * p.batches : p.N;
  const uint a_base = FOLD_BATCH ? 0 : gl_WorkGroupID.z * p.a_bs;
  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint c = 0; c < TN; ++c) acc[i][c] = 0.0;
  // Clamp indices instead of branching in the loop; out-of-range results are never stored.
  [[unroll]] for (uint c = 0; c < TN; ++c) {
    const uint col = min(n0 + c * SG, columns - 1);
    col_batch[c] = FOLD_BATCH ? col / p.N : gl_WorkGroupID.z;
    col_n[c] = FOLD_BATCH ? col % p.N : col;
  }
  for (uint k0 = 0; k0 < p.K; k0 += SG) {
    // Lanes past K load a copy and never shuffle it out (a select around the load cost 10%).
    const uint k = min(k0 + lane, p.K - 1);
    [[unroll]] for (uint i = 0; i < TM; ++i) av[i] = load_a(a_base, min(m0 + i, p.M - 1), k);
    const uint steps = min(SG, p.K - k0);
    if (steps == SG) {
      k_block(k0);
    } else {
      for (uint j = 0; j < steps; ++j) k_step(k0 + j, j);
    }
  }
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= p.M) break;
    [[unroll]] for (uint c = 0; c < TN; ++c)
      if (n0 + c * SG < columns) store_c(col_batch[c] * p.c_bs, m, col_n[c], acc[i][c]);
  }
}
#endif  // RILL_MATMUL_TEXEL
