// Contracts of the language-model kernels in shaders/lm (see prelude.glsl).
#ifndef RILL_CONTRACT_LM_GLSL
#define RILL_CONTRACT_LM_GLSL
#include "contract/prelude.glsl"

// merge_heads and lrpe: [heads, len, dim] per batch.
RILL_PUSH_STRUCT(HeadsPush) {
  uint heads;
  uint len;
  uint dim;
};

// copy_rows: rows of cols from src (first src_first of src_rows) to dst, per batch.
RILL_PUSH_STRUCT(CopyRowsPush) {
  uint batches;
  uint rows;
  uint cols;
  uint src_rows;
  uint src_first;
  uint dst_rows;
  uint dst_first;
};

RILL_PUSH_STRUCT(KvAppendPush) {
  uint heads;
  uint nq;
  uint dk;
  uint dv;
  uint cap;
};

RILL_PUSH_STRUCT(AttendPush) {
  uint nq;
  uint cap;
  float scale;
};

// The fused decoding kernels (shaders/lm/decode_*.glsl): one position through a layer in two
// dispatches. Residual rows are [width] in the storage type; the partial sums between dispatches
// are f32 rows of width (+ 1 for the mixer's: its sum of squares for the output norm).
RILL_PUSH_STRUCT(DecodeMixPush) {
  uint width;
  uint parts_in;  // partial rows of the previous FFN added to the residual (0: the residual is the input)
  uint cap;       // softmax mixers: cache rows
  uint group;     // int8 weights: rows per scale
  float eps;
  float scale;    // softmax mixers: 1 / sqrt(head dim)
};

RILL_PUSH_STRUCT(DecodeFfnPush) {
  uint width;
  uint ffn;
  uint heads;  // the mixer's partial rows
  uint slice;  // FFN columns per workgroup
  uint group;
  float eps;
};

RILL_PUSH_STRUCT(DecodeLogitsPush) {
  uint width;
  uint vocab;
  uint parts_in;
  uint columns;  // logits per workgroup
  uint group;
  float eps;
};

// token_log_probs: one vocabulary block's logits [rows, count] of the rows from row_offset on, the
// block's first token id, the vocabulary, and which of the row's blocks this is
// (kLogProbFirstBlock, kLogProbLastBlock).
RILL_PUSH_STRUCT(TokenLogProbPush) {
  uint rows;
  uint row_offset;
  uint count;
  uint first;
  uint vocab;
  uint flags;
};
const uint kLogProbFirstBlock = 1u;
const uint kLogProbLastBlock = 2u;
const uint kLogProbRunningWords = 4u;  // per row: max, sum of exp(x - max), target's logit, unused

#endif  // RILL_CONTRACT_LM_GLSL
