// The device side of a TransNormer model: its weights as tensors, and the activations and
// recorded sequence of one forward over L positions (a prefill segment, or L = 1 for decoding).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rill/context.hpp"
#include "rill/lm.hpp"
#include "rill/ops/packed_weights.hpp"

namespace rill::lm::detail {

// A linear layer's weight [.., in, out]: a tensor in the model's precision, or packed
// (ModelOptions::weights); the graph's matmuls take either.
struct LinearWeight {
  Tensor dense;
  ops::PackedWeights packed;
  uint64_t size_bytes() const { return dense.size_bytes() + packed.size_bytes(); }
};

struct LayerTensors {
  LayerKind kind = LayerKind::kNorm;
  Tensor attn_norm, out_norm, ffn_norm;  // empty for SRMSNorm
  Tensor out_norm_f32;                   // f16 models: out_norm in f32, for the NormAttention output kept in f32
  LinearWeight wq, wk, wv, wo, wu, wg, wd;
  LinearWeight wgate;  // [D, D] with the output gate
  Tensor decay;  // [H] f32, empty when the layer has none
  // LRPE layers: the angles theta [H * Dh] on the host (each call's base rotation is computed from
  // them) and the rotations within a segment, [64 * ceil(segment / 64) positions: coarse, fine].
  std::vector<float> lrpe_theta;
  Tensor lrpe_coarse, lrpe_fine;  // f32 [rows, H * Dh, 2] (cos, sin)
};

// The output head's vocabulary columns [first, first + count): dense, the tied embedding's rows
// [count, D] (transposed: a view of the table) or the head's columns [D, count]; or packed, the
// columns [D, count] of the tied embed_t's block or of the head's.
struct HeadBlock {
  int64_t first = 0, count = 0;
  Tensor weight;
  ops::PackedWeights packed;
  bool transposed = false;
  bool owns = false;  // its own memory (the untied head), not the embedding's
};

struct ModelTensors {
  Tensor embed, final_norm;
  // With packed weights: the embedding transposed, [D, V] (and the tied head), in column blocks
  // that each fit one storage binding (one block where the whole fits).
  ops::PackedColumnBlocks embed_t;
  // The head (tied or not) in blocks of the vocabulary that each fit one storage binding (one, the
  // whole matrix, where it fits); each block's logits start 256 bytes apart.
  std::vector<HeadBlock> head_blocks;
  std::vector<LayerTensors> layers;
};

// The logits of one head block: the row's columns [first, first + count) as [1, count] (the row
// itself where the block is the whole vocabulary).
Result<Tensor> logits_of(const Tensor& logits, const HeadBlock& block);

// Per-session state: NormAttention states [1, H, Dh, Dh] f32, DiagAttention block caches and
// softmax caches [H, rows, Dh] (rows: block, or the softmax capacity); empty for other kinds.
struct StateTensors {
  std::vector<Tensor> la_state, cache_k, cache_v;
};

// What a Graph computes: a prefill segment's last logits; the same and every row's log-probability
// of its next token (Session::score); one position through the recurrent forms (state step, cache
// attention).
enum class GraphForm { kPrefill, kScore, kDecode };

// One forward over `len` positions starting at the position in `pos`: ids [len] u32 -> the
// logits of the last position [1, vocab].
struct Graph {
  uint32_t len = 0;
  bool decode = false;  // GraphForm::kDecode
  bool scored = false;  // GraphForm::kScore
  Tensor ids, pos, errors;
  Tensor x[2], u, rstd, q, k, v, o, lse, merged, mixed, attn_out, h, g, a, b, hidden, ffn_out, last, logits;
  Tensor q2, k2, gate, gated;       // LRPE's [1, H, L, 2 Dh] q and k; the output gate and its product
  // f16 models with NormAttention layers: the layer's output [1, H, L, Dh] and its heads merged
  // [L, D], kept in f32 until its norm (without decay it sums over every earlier position and
  // passes f16's 65504 within a few thousand positions).
  Tensor o32, merged32;
  std::vector<Tensor> lrpe_base;    // per layer (LRPE layers only): f32 [H * Dh, 2], set by each run
  // Fused decoding (decode_fused.hpp): the residual row, the layer's input row, and the partial
  // rows of the mixer [H, D + 1] (with each head's sum of squares) and of the FFN [slices, D], f32.
  bool fused = false;
  Tensor resid, layer_in, parts_mix, parts_ffn;
  // Scoring: each row's next token (u32 [len], >= vocab for none), a chunk of head_rows rows of u
  // and their logits for one vocabulary block at a time, the softmax's running sums between blocks
  // (f32 [len, 4]) and the log-probabilities (f32 [len]).
  Tensor targets, head_rows_in, head_chunk, running, log_probs;
  uint32_t head_rows = 0;
  std::optional<Sequence> seq;  // recorded once, replayed for every segment or token
  DownloadId logits_id, log_probs_id;
  uint64_t device_bytes = 0;  // what making it allocated: its tensors and its recording's workspaces
};

}  // namespace rill::lm::detail

namespace rill::lm {

struct Model::Impl {
  explicit Impl(Context shared) : ctx(std::move(shared)) {}
  // Shares the application's context, so the model and its sessions keep the device alive. Mutable:
  // a const model still records and uploads through it, as through the pointer it replaced.
  mutable Context ctx;
  ModelConfig config;
  ModelOptions options;
  DType dtype = DType::kF32;
  uint32_t segment = 0;  // prefill segment length actually used (whole DiagAttention blocks)
  detail::ModelTensors tensors;
  uint64_t weight_bytes = 0;
  std::string weights_fingerprint;  // detail::weights_fingerprint: saved states carry it
};

}  // namespace rill::lm
