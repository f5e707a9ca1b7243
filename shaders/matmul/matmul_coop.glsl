// Matmul on cooperative matrices: f16 A and B, f32 accumulation, f16 C (with bias and accumulate).
// A workgroup of GROUPS_M x GROUPS_N subgroups computes a BM x BN block of C; each subgroup owns
// FRAGS_M x FRAGS_N accumulator fragments of FM x FN. Slices of BK along k are staged in shared
// memory as they arrive, 16-byte words of 8 halves (rows of A and B contiguous, K and N multiples of
// 8): one shared store per global load, where storing halves one by one took eight. BUFFERS = 2
// stages alternate, so the next slice is stored while the current one is multiplied and each slice
// costs one barrier (one stage: two). The next slice is fetched into registers during the current
// one's products either way. The accumulators leave through a per-subgroup f32 stage, so bias,
// accumulation and the edges of C are plain code.
//
// RILL_COOP_NV: the fragments are VK_NV_cooperative_matrix types (tensor cores on NVIDIA), loaded
// from the 16-byte words (offsets and strides in words). Without it, the same tiling runs with each
// fragment emulated by plain arithmetic over shared memory, so every device (lavapipe in CI) tests
// the staging, fragment offsets and epilogue; only the four primitives below differ between the two.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#if defined(RILL_COOP_NV)
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#define RILL_STORAGE_F16
#define RILL_MATMUL_VEC8
#include "matmul_common.glsl"

layout(constant_id = 0) const uint WG = 128;     // SG * GROUPS_M * GROUPS_N
layout(constant_id = 1) const uint SG = 32;      // invocations per subgroup (the device's size)
layout(constant_id = 4) const uint GROUPS_M = 2; // subgroups along m and n
layout(constant_id = 5) const uint GROUPS_N = 2;
layout(constant_id = 6) const uint FRAGS_M = 2;  // fragments per subgroup along m and n
layout(constant_id = 7) const uint FRAGS_N = 2;
layout(constant_id = 8) const uint FM = 16;      // fragment shape M x N x K
layout(constant_id = 9) const uint FN = 16;
layout(constant_id = 10) const uint FK = 16;
layout(constant_id = 11) const uint BUFFERS = 2;  // shared stages of a slice: 1 or 2
// k steps per slice (kCoopSliceDepth or 64): a deeper slice halves the barriers and the waits on
// memory per k, for twice the shared memory and the registers of the next slice.
layout(constant_id = 12) const uint BK = kCoopSliceDepth;
layout(local_size_x_id = 0) in;

const uint BM = GROUPS_M * FRAGS_M * FM;
const uint BN = GROUPS_N * FRAGS_N * FN;
// Rows of the stages in 16-byte words, one word of padding each: every fragment row stays 16-byte
// aligned, and the 8 rows a quarter of a subgroup reads at once fall in different banks.
const uint A_ROW = (BK + kCoopRowPadHalves) / 8;
const uint B_ROW = (BN + kCoopRowPadHalves) / 8;
const uint A_STAGE = BM * A_ROW, B_STAGE = BK * B_ROW;  // words per stage
const uint A_VECS = BM * BK / 8, B_VECS = BK * BN / 8;  // 8-half loads per slice
const uint A_PER = (A_VECS + WG - 1) / WG, B_PER = (B_VECS + WG - 1) / WG;
const uint FRAGS = FRAGS_M * FRAGS_N;

shared uvec4 tile_a[BUFFERS * A_STAGE];  // [stage][m][k / 8]
shared uvec4 tile_b[BUFFERS * B_STAGE];  // [stage][k][n / 8]
shared float stage[GROUPS_M * GROUPS_N * FM * FN];

#if defined(RILL_COOP_NV)
#define ACC_FRAG fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>
#define A_FRAG fcoopmatNV<16, gl_ScopeSubgroup, FM, FK>
#define B_FRAG fcoopmatNV<16, gl_ScopeSubgroup, FK, FN>
#define ZERO_ACC(f) f = ACC_FRAG(0.0)
#define LOAD_A(f, word) coopMatLoadNV(f, tile_a, word, A_ROW, false)
#define LOAD_B(f, word) coopMatLoadNV(f, tile_b, word, B_ROW, false)
#define MUL_ADD(acc, fa, fb) acc = coopMatMulAddNV(fa, fb, acc)
#define STORE_ACC(f, offset) coopMatStoreNV(f, stage, offset, FN, false)
uint group_id() { return gl_SubgroupID; }
uint lane_id() { return gl_SubgroupInvocationID; }
// A stage belongs to one subgroup: its lanes wait for each other only, not for the workgroup.
#define STAGE_SYNC() \
  subgroupMemoryBarrierShared(); \
  subgroupBarrier()
#else
// Emulated fragments: lane l of a subgroup holds accumulator elements e = l + SG q (row e / FN,
// column e % FN); an A or B fragment is the shared word of its first element.
const uint ACC_PER_LANE = FM * FN / SG;
#define ACC_FRAG float[ACC_PER_LANE]
#define A_FRAG uint
#define B_FRAG uint
#define ZERO_ACC(f) [[unroll]] for (uint q_ = 0u; q_ < ACC_PER_LANE; ++q_) f[q_] = 0.0
#define LOAD_A(f, word) f = (word)
#define LOAD_B(f, word) f = (word)
#define MUL_ADD(acc, fa, fb) mul_add(acc, fa, fb)
#define STORE_ACC(f, offset) store_acc(f, offset)
uint group_id() { return gl_LocalInvocationID.x / SG; }
uint lane_id() { return gl_LocalInvocationID.x % SG; }
// The emulated groups are ranges of invocations, not necessarily the device's subgroups.
#define STAGE_SYNC() barrier()
// Half h (0..7) of a 16-byte word.
float half_of(uvec4 word, uint h) { return unpackHalf2x16(word[h / 2u])[h % 2u]; }
// Rolled loops: unrolled, lavapipe's compiler took minutes over the eight inlined products.
void mul_add(inout float acc[ACC_PER_LANE], uint fa, uint fb) {
  [[dont_unroll]] for (uint q = 0u; q < ACC_PER_LANE; ++q) {
    const uint e = lane_id() + SG * q, r = e / FN, c = e % FN;
    float sum = acc[q];
    [[dont_unroll]] for (uint k = 0u; k < FK; ++k)
      sum = fma(half_of(tile_a[fa + r * A_ROW + k / 8u], k % 8u), half_of(tile_b[fb + k * B_ROW + c / 8u], c % 8u),
                sum);
    acc[q] = sum;
  }
}
void store_acc(float acc[ACC_PER_LANE], uint offset) {
  [[unroll]] for (uint q = 0u; q < ACC_PER_LANE; ++q) stage[offset + lane_id() + SG * q] = acc[q];
}
#endif

uvec4 next_a[A_PER], next_b[B_PER];  // the next slice, fetched during the current one's products

// Slice k0 of this block into registers; zeros outside A and B (whole vectors: K, N % 8 == 0).
void fetch(uint batch, uint block_m, uint block_n, uint k0) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
    const uint v = tid + i * WG, m = block_m + v / (BK / 8u), k = k0 + (v % (BK / 8u)) * 8u;
    next_a[i] = v < A_VECS && m < p.M && k < p.K ? a8[(batch * p.a_bs + m * p.K + k) / 8u] : uvec4(0u);
  }
  [[unroll]] for (uint i = 0u; i < B_PER; ++i) {
    const uint v = tid + i * WG, k = k0 + v / (BN / 8u), n = block_n + (v % (BN / 8u)) * 8u;
    next_b[i] = v < B_VECS && k < p.K && n < p.N ? b8[(batch * p.b_bs + k * p.N + n) / 8u] : uvec4(0u);
  }
}

// The fetched slice into stage `buf`: one 16-byte store per fetched word.
void store_slice(uint buf) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
    const uint v = tid + i * WG;
    if (v < A_VECS) tile_a[buf * A_STAGE + (v / (BK / 8u)) * A_ROW + v % (BK / 8u)] = next_a[i];
  }
  [[unroll]] for (uint i = 0u; i < B_PER; ++i) {
    const uint v = tid + i * WG;
    if (v < B_VECS) tile_b[buf * B_STAGE + (v / (BN / 8u)) * B_ROW + v % (BN / 8u)] = next_b[i];
  }
}

void main() {
  const uint batch = gl_WorkGroupID.z;
  const uint block_m = gl_WorkGroupID.y * BM, block_n = gl_WorkGroupID.x * BN;
  const uint group = group_id(), gm = group / GROUPS_N, gn = group % GROUPS_N;
  const uint row0 = gm * FRAGS_M * FM, col0 = gn * FRAGS_N * FN;  // this subgroup's corner in the block

  ACC_FRAG acc[FRAGS];
  [[unroll]] for (uint f = 0u; f < FRAGS; ++f) ZERO_ACC(acc[f]);

  fetch(batch, block_m, block_n, 0u);
  store_slice(0u);
  for (uint k0 = 0u, buf = 0u; k0 < p.K; k0 += BK) {
    // Slice in `buf` stored -> read as fragments; with two stages also: the other stage's
    // fragments (the previous slice) read -> overwritten below.
    barrier();
    const bool more = k0 + BK < p.K;
    if (more) fetch(batch, block_m, block_n, k0 + BK);
    [[unroll]] for (uint kk = 0u; kk < BK; kk += FK) {
      A_FRAG fa[FRAGS_M];
      [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i) LOAD_A(fa[i], buf * A_STAGE + (row0 + i * FM) * A_ROW + kk / 8u);
      [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) {
        B_FRAG fb;
        LOAD_B(fb, buf * B_STAGE + kk * B_ROW + (col0 + j * FN) / 8u);
        [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i) MUL_ADD(acc[i * FRAGS_N + j], fa[i], fb);
      }
    }
    if (more) {
      if (BUFFERS == 1u) barrier();  // the one stage's fragments read -> overwritten
      buf = (buf + 1u) % BUFFERS;
      store_slice(buf);
    }
  }

  // Each fragment through the subgroup's stage: bias, accumulation and the edges of C per element.
  const uint own = group * FM * FN, c_base = batch * p.c_bs;
  [[unroll]] for (uint f = 0u; f < FRAGS; ++f) {
    STAGE_SYNC();  // the previous fragment's stage read -> overwritten
    STORE_ACC(acc[f], own);
    STAGE_SYNC();  // stage written -> read by the subgroup's lanes
    const uint r0 = block_m + row0 + (f / FRAGS_N) * FM, c0 = block_n + col0 + (f % FRAGS_N) * FN;
    for (uint e = lane_id(); e < FM * FN; e += SG) {
      const uint m = r0 + e / FN, n = c0 + e % FN;
      if (m < p.M && n < p.N) store_c(c_base, m, n, stage[own + e]);
    }
  }
}
