// Contracts of the linear- and block-attention kernels (see prelude.glsl).
#ifndef RILL_CONTRACT_ATTENTION_GLSL
#define RILL_CONTRACT_ATTENTION_GLSL
#include "contract/prelude.glsl"

// The feature maps phi (FEATURE; ops::FeatureMap has the same numbers).
const uint kFeatureIdentity = 0u;
const uint kFeatureElu1 = 1u;  // elu(x) + 1
const uint kFeatureRelu = 2u;
const uint kFeatureSilu = 3u;

// la_chunked (forward) and la_chunked_bwd walk chunk_count chunks from first_chunk.
RILL_PUSH_STRUCT(LaChunkPush) {
  uint heads;
  uint n;
  uint dk;
  uint dv;
  uint first_chunk;
  uint chunk_count;
};

// la_chunked's MODE.
const uint kLaForwardCausal = 0u;  // outputs of causal attention, carrying the state
const uint kLaForwardState = 1u;   // only the state update (first pass of non-causal attention)
const uint kLaForwardApply = 2u;   // o_t = q_t S (second pass of non-causal attention)

// la_chunked_bwd's MODE.
const uint kLaBackwardDq = 0u;     // dq, forward in time
const uint kLaBackwardDk = 1u;     // dk, backward in time
const uint kLaBackwardDv = 2u;     // dv, backward in time
const uint kLaBackwardState = 3u;  // R = phi(Q)^T dO (non-causal)

// la_par_states / la_par_scan / la_par_output: a window of chunks from first_chunk. The chunk
// states buffer holds, per head, `window` chunk states from 0 and (SPAN > 1) the spans' states from
// states_base (la_par_common.glsl); the scan over spans sees a window of spans from states_base.
RILL_PUSH_STRUCT(LaWindowPush) {
  uint heads;
  uint n;
  uint dk;
  uint dv;
  uint first_chunk;
  uint window;
  uint states_base;
};

// la_scan_cpu: count positions from first.
RILL_PUSH_STRUCT(LaScanPush) {
  uint heads;
  uint n;
  uint dk;
  uint dv;
  uint first;
  uint count;
};

// la_step: one decoded token.
RILL_PUSH_STRUCT(LaStepPush) {
  uint heads;
  uint dk;
  uint dv;
};

// la_naive: the keys s in [s_begin, s_end), added to the output when accumulate is 1.
RILL_PUSH_STRUCT(LaNaivePush) {
  uint heads;
  uint n;
  uint dk;
  uint dv;
  uint total;  // batch * heads * n * dv
  uint s_begin;
  uint s_end;
  uint accumulate;
};

RILL_PUSH_STRUCT(BlockAttentionPush) {
  uint n;
  uint dk;
  uint dv;
  float scale;
  uint first_block;  // the dispatch's first block (the CPU backward's windows of blocks; 0 elsewhere)
};

// block_attention_bwd's MODE and block_attention_bwd_cpu's KIND.
const uint kBlockBackwardDq = 0u;    // per query row: delta and dq
const uint kBlockBackwardDkDv = 1u;  // per key row: dk and dv
// block_attention_bwd_cpu only: per key row dk and dv, with every dS[t][s] into the scores
// workspace and delta; then dq = dS K per row group from that workspace.
const uint kBlockBackwardDkDvScores = 2u;
const uint kBlockBackwardDqFromScores = 3u;

#endif  // RILL_CONTRACT_ATTENTION_GLSL
