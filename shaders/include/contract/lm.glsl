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

#endif  // RILL_CONTRACT_LM_GLSL
