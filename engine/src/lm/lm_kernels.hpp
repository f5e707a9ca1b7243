// Dispatch of the language model's own kernels (shaders/lm): head merging, row copies, the
// decoding-time key/value cache and softmax attention over it. Checks shapes like the public ops.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rill/ops/linear_attention.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill::lm::detail {

// out [L, H * D] from in [.., H, L, D].
Status merge_heads(Sequence& seq, const Tensor& in, const Tensor& out);

// dst[b, dst_first + r, :] = src[b, src_first + r, :] for r < rows; src [.., B, src_rows, cols],
// dst [.., B, dst_rows, cols].
Status copy_rows(Sequence& seq, const Tensor& src, uint32_t src_first, const Tensor& dst, uint32_t dst_first,
                 uint32_t rows);

// k [.., H, R, Dk], v [.., H, R, Dv] into rows (pos + r) % block (block > 0, R = 1) or pos + r
// (block 0) of cache_k [H, cap, Dk], cache_v [H, cap, Dv]; pos: u32 [1], read when the sequence
// runs (the caller keeps pos + R within the capacity).
Status kv_append(Sequence& seq, const Tensor& k, const Tensor& v, const Tensor& pos, const Tensor& cache_k,
                 const Tensor& cache_v, uint32_t block);

// Softmax attention of q [.., H, NQ, Dk] (row r at position pos + r) over the cache: o like q
// with Dv columns. max_position bounds pos + NQ - 1 (for the loop budget and the capacity check).
Status attend(Sequence& seq, const Tensor& q, const Tensor& cache_k, const Tensor& cache_v, const Tensor& pos,
              const Tensor& o, uint32_t block, uint64_t max_position);

// LRPE (see shaders/lm/lrpe.glsl): y [.., H, L, 2 Dh] from x [.., H, L, Dh] with the feature map
// applied; base f32 [H * Dh, 2], coarse [>= ceil(L / 64), H * Dh, 2], fine [64, H * Dh, 2].
Status lrpe(Sequence& seq, const Tensor& x, const Tensor& base, const Tensor& coarse, const Tensor& fine,
            const Tensor& y, ops::FeatureMap feature_map);

// Which rows and which of their vocabulary blocks token_log_probs is given: the logits' row r is
// row row_offset + r of the targets and results; the block is the first, the last (both for a
// vocabulary in one block) or one between.
struct LogProbBlock {
  uint32_t row_offset = 0;
  uint32_t first = 0;  // the block's first token id
  uint32_t vocab = 0;  // the whole vocabulary
  bool first_block = true, last_block = true;
};

// log_probs[o + r] = logits[r, targets[o + r]] - logsumexp(logits[r, :]) (f32; NaN where the
// target >= vocab; o = row_offset) from the logits [rows, count] of one vocabulary block at a time,
// in order: running f32 [.., 4] carries each row's partial sums from one block to the next.
Status token_log_probs(Sequence& seq, const Tensor& logits, const Tensor& targets, const Tensor& running,
                       const Tensor& log_probs, const LogProbBlock& block);

// (cos, sin) of theta[c] * (first + r * step) for rows r < rows, [rows, theta.size(), 2], computed
// in double: the angles stay exact at any position a session reaches.
std::vector<float> lrpe_rotations(std::span<const float> theta, uint64_t first, uint64_t step, uint32_t rows);

}  // namespace rill::lm::detail
