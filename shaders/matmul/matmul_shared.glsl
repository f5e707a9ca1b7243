// Matmul with shared-memory tiles (the GPU variant): a workgroup of WG_X x WG_Y invocations computes
// a (WG_Y*TM) x (WG_X*TN) block of C, staging BK-deep slices of A and B in shared memory (the next
// slice fetched into registers during the current one's products); each invocation keeps TM x TN
// accumulators in registers.
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint WG_X = 16;
layout(constant_id = 1) const uint WG_Y = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint BK = 16;
// SPLITS > 1: the workgroups of z = batch * SPLITS + split each take a share of K and write their f32
// partial products to `partial` [SPLITS, batches, M, N]; matmul_split_sum.glsl adds them into C.
layout(constant_id = 7) const uint SPLITS = 1;
// Which rows and columns of the block an invocation's accumulators are. Strided (false): rows
// y + i WG_Y, columns x + j WG_X; each read of a slice is then one word per invocation, without
// bank conflicts. GROUPED: runs of VM = min(TM, 4) adjacent rows WG_Y VM apart (and of VN adjacent
// columns), so that an invocation's TM values of one k step are VM-word vectors, which a GPU
// compiler can read as 16-byte shared loads (TM / 4 + TN / 4 loads per step where strided takes
// TM + TN), and C is written in runs of VN columns.
layout(constant_id = 8) const bool GROUPED = false;
// STAGES 2: two sets of shared tiles taken in turn, so the next slice is stored while others may
// still read the current one: one barrier per slice instead of two, for twice the shared memory.
layout(constant_id = 9) const uint STAGES = 1;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

#include "matmul_common.glsl"
#if defined(B_PACKED)
#define PARTIAL_BINDING 5  // after the packed B's scales
#else
#define PARTIAL_BINDING 4
#endif
layout(std430, binding = PARTIAL_BINDING) writeonly buffer Partial { float partial[]; };

const uint BM = WG_Y * TM;
const uint BN = WG_X * TN;
const uint VM = TM < 4u ? TM : 4u, VN = TN < 4u ? TN : 4u;
// k-major so that the inner loop reads along m and n; padding spreads the stores of a k-fastest
// load over the memory banks: one column, or 4 with GROUPED (rows stay 16-byte aligned).
const uint PAD = GROUPED ? 4u : 1u;
shared afloat tile_a[STAGES][BK][BM + PAD];
shared afloat tile_b[STAGES][BK][BN + PAD];

// Row (within the block) of accumulator row i, and column of accumulator column j.
uint row_of(uint i) {
  const uint y = gl_LocalInvocationID.y;
  return GROUPED ? (i / VM) * (WG_Y * VM) + y * VM + i % VM : y + i * WG_Y;
}
uint column_of(uint j) {
  const uint x = gl_LocalInvocationID.x;
  return GROUPED ? (j / VN) * (WG_X * VN) + x * VN + j % VN : x + j * WG_X;
}

const uint THREADS = WG_X * WG_Y;
const uint A_PER = (BK * BM + THREADS - 1) / THREADS, B_PER = (BK * BN + THREADS - 1) / THREADS;
// The next slice, fetched while the current one is multiplied. The fetch and store loops are
// unrolled, so a loop-limited driver counts only the k steps (the plan's budget assumes no more).
afloat next_a[A_PER], next_b[B_PER];

// Slice k0 of A and B into registers, zero-padded outside the matrices and past k_end. Neighbouring invocations
// read neighbouring addresses (coalesced on GPUs): along k where it is contiguous (A's rows, a
// transposed B), else along m or n.
void fetch(uint batch, uint a_base, uint block_m, uint block_n, uint k0, uint k_end, bool a_along_k, bool b_along_k) {
  const uint tid = gl_LocalInvocationID.y * WG_X + gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
    const uint e = tid + i * THREADS;
    const uint kk = a_along_k ? e % BK : e / BM, mm = a_along_k ? e / BK : e % BM;
    const uint m = block_m + mm, k = k0 + kk;
    next_a[i] = (e < BK * BM && m < p.M && k < k_end) ? load_a(a_base, m, k) : afloat(0.0);
  }
  [[unroll]] for (uint i = 0u; i < B_PER; ++i) {
    const uint e = tid + i * THREADS;
    const uint kk = b_along_k ? e % BK : e / BN, nn = b_along_k ? e / BK : e % BN;
    const uint n = block_n + nn, k = k0 + kk;
    next_b[i] = (e < BK * BN && n < p.N && k < k_end) ? load_b(batch, k, n) : afloat(0.0);
  }
}

// The fetched slice into shared stage `stage` (the same element order as fetch).
void store_slice(uint stage, bool a_along_k, bool b_along_k) {
  const uint tid = gl_LocalInvocationID.y * WG_X + gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
    const uint e = tid + i * THREADS;
    if (e < BK * BM) tile_a[stage][a_along_k ? e % BK : e / BM][a_along_k ? e / BK : e % BM] = next_a[i];
  }
  [[unroll]] for (uint i = 0u; i < B_PER; ++i) {
    const uint e = tid + i * THREADS;
    if (e < BK * BN) tile_b[stage][b_along_k ? e % BK : e / BN][b_along_k ? e / BK : e % BN] = next_b[i];
  }
}

afloat acc[TM][TN];

// acc += the slice in shared stage `stage`.
void multiply_slice(uint stage) {
  for (uint kk = 0; kk < BK; ++kk) {
    afloat av[TM], bv[TN];
    for (uint i = 0; i < TM; ++i) av[i] = tile_a[stage][kk][row_of(i)];
    for (uint j = 0; j < TN; ++j) bv[j] = tile_b[stage][kk][column_of(j)];
    for (uint i = 0; i < TM; ++i)
      for (uint j = 0; j < TN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
  }
}

void main() {
  const uint batch = gl_WorkGroupID.z / SPLITS, split = gl_WorkGroupID.z % SPLITS;
  // This split's k range, whole slices.
  const uint k_share = ((p.K + SPLITS - 1u) / SPLITS + BK - 1u) / BK * BK;
  const uint k_begin = min(p.K, split * k_share), k_end = min(p.K, k_begin + k_share);
  const uint block_m = gl_WorkGroupID.y * BM, block_n = gl_WorkGroupID.x * BN;
  const uint a_base = batch * p.a_bs;
  const bool a_along_k = p.a_cs == 1u && p.a_rs != 1u;
#if defined(B_PACKED)
  const bool b_along_k = false;  // packed rows of words: n is contiguous
#else
  const bool b_along_k = p.b_rs == 1u && p.b_cs != 1u;
#endif
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  // The global loads of slice k0 + BK are in flight while slice k0 is multiplied: a workgroup
  // waits on memory once, not once per slice.
  fetch(batch, a_base, block_m, block_n, k_begin, k_end, a_along_k, b_along_k);
  if (STAGES == 1u) {
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
      barrier();  // the previous slice read -> overwritten
      store_slice(0u, a_along_k, b_along_k);
      barrier();  // tiles written -> read by every invocation
      if (k0 + BK < k_end) fetch(batch, a_base, block_m, block_n, k0 + BK, k_end, a_along_k, b_along_k);
      multiply_slice(0u);
    }
  } else {
    if (k_begin < k_end) store_slice(0u, a_along_k, b_along_k);
    barrier();  // the first slice written -> read
    uint stage = 0u;
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
      const bool more = k0 + BK < k_end;  // uniform
      if (more) fetch(batch, a_base, block_m, block_n, k0 + BK, k_end, a_along_k, b_along_k);
      multiply_slice(stage);
      // The other stage was last read before the previous barrier: free to overwrite.
      if (more) store_slice(stage ^ 1u, a_along_k, b_along_k);
      barrier();  // the next slice written -> read; this one read -> overwritten after the next
      stage ^= 1u;
    }
  }
  const uint c_base = batch * p.c_bs, partial_base = (split * p.batches + batch) * p.M * p.N;
  for (uint i = 0; i < TM; ++i) {
    const uint m = block_m + row_of(i);  // increasing in i
    if (m >= p.M) break;
    for (uint j = 0; j < TN; ++j) {
      const uint n = block_n + column_of(j);
      if (n >= p.N) continue;
      if (SPLITS > 1u)
        partial[partial_base + m * p.N + n] = float(acc[i][j]);
      else
        store_c(c_base, m, n, acc[i][j]);
    }
  }
}
