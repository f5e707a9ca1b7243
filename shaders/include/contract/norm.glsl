// Contracts of the RMSNorm, softmax and embedding kernels (see prelude.glsl).
#ifndef RILL_CONTRACT_NORM_GLSL
#define RILL_CONTRACT_NORM_GLSL
#include "contract/prelude.glsl"

RILL_PUSH_STRUCT(RmsnormForwardPush) {
  uint rows;
  uint dim;
  float eps;
};

// rmsnorm_bwd (dx).
RILL_PUSH_STRUCT(RmsnormBackwardPush) {
  uint rows;
  uint dim;
};

// rmsnorm_bwd_gain: partial dgain sums over blocks of rows_per_block rows.
RILL_PUSH_STRUCT(RmsnormGainPush) {
  uint rows;
  uint dim;
  uint rows_per_block;
};

// rmsnorm_bwd_gain_sum: the sum of the blocks' partial sums.
RILL_PUSH_STRUCT(RmsnormGainSumPush) {
  uint blocks;
  uint dim;
};

RILL_PUSH_STRUCT(SoftmaxPush) {
  uint rows;
  uint vocab;
};

RILL_PUSH_STRUCT(EmbeddingPush) {
  uint tokens;
  uint vocab;
  uint dim;
  float scale;
  uint words_per_row;  // packed table only
  uint group;          // packed table only
  uint first;          // the rows [first, first + rows) of the vocabulary the bound table holds
  uint rows;
};

RILL_PUSH_STRUCT(EmbeddingBackwardPush) {
  uint tokens;
  uint vocab;
  uint dim;
};

#endif  // RILL_CONTRACT_NORM_GLSL
