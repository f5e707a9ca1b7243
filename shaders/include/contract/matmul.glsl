// Contract of the matmul and matvec kernels (see prelude.glsl).
#ifndef RILL_CONTRACT_MATMUL_GLSL
#define RILL_CONTRACT_MATMUL_GLSL
#include "contract/prelude.glsl"

// Packed weight words (rill/ops/packed_weights.hpp, read by packed_weights.glsl): values per 32-bit
// word, the lowest-numbered column in the lowest bits.
const uint kPackedInt8PerWord = 4u;
const uint kPackedInt4PerWord = 8u;
const uint kPackedF16PerWord = 2u;

// The cooperative-matrix matmul (matmul_coop.glsl) stages k slices this deep unless its plan says
// deeper (spec constant BK: 32 or 64), each staged row padded by one 16-byte word of halves; its plan
// (kernel_plan.hpp) sizes the shared memory from them.
const uint kCoopSliceDepth = 32u;
const uint kCoopRowPadHalves = 8u;

// C[M, N] = A[M, K] B[K, N] per batch, with strides in elements.
RILL_PUSH_STRUCT(MatmulPush) {
  uint M;
  uint N;
  uint K;
  uint a_rs;  // row, column and batch strides of A
  uint a_cs;
  uint a_bs;
  uint b_rs;
  uint b_cs;
  uint b_bs;
  uint c_bs;
  uint b_group;  // packed B: rows per int8 scale
  uint s_bs;     // packed B: scales per matrix
  uint batches;  // matrices of C
};

#endif  // RILL_CONTRACT_MATMUL_GLSL
