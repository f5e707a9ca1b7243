// Recording of one forward over L positions (see Graph in model_impl.hpp): the layer loop of the
// model comment in lm.hpp, in the chunked forms for a prefill segment and the recurrent forms
// (linear-attention state step, cached softmax attention) for a decoding step.
#include "lm/graph.hpp"

#include <algorithm>

#include "kernel_plan.hpp"
#include "lm/decode_fused.hpp"
#include "lm/lm_kernels.hpp"
#include "rill/ops/block_attention.hpp"
#include "rill/ops/elementwise.hpp"
#include "rill/ops/linear_attention.hpp"
#include "rill/ops/matmul.hpp"
#include "rill/ops/rmsnorm.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill::lm::detail {
namespace {

const Tensor* gain_of(const Tensor& t) { return t.valid() ? &t : nullptr; }

// y = x W for a linear layer's weight in either form.
Status linear(Sequence& seq, const Tensor& x, const LinearWeight& w, const Tensor& y) {
  return w.packed.valid() ? ops::matmul(seq, x, w.packed, y) : ops::matmul(seq, x, w.dense, y);
}

// out = x times the head block's weight: the block's logits [rows, count] of the rows of x.
Status head_product(Sequence& seq, const Tensor& x, const HeadBlock& b, const Tensor& out) {
  if (b.packed.valid()) return ops::matmul(seq, x, b.packed, out);
  return ops::matmul(seq, x, b.weight, out, {.transpose_b = b.transposed});
}

// The head's logits for scoring take a chunk of rows at a time, so a large vocabulary's [rows,
// vocab] never exists at once: chunks of up to this many bytes (a 64,000-token vocabulary in f32:
// 64 rows), and within one storage binding; whole 64-row matmul tiles where 64 rows fit (65 rows
// took a second tile for one row: the 385M model's scoring ran 1.42x its prefill on lavapipe).
constexpr uint64_t kScoreChunkBytes = 16ull << 20;
constexpr uint64_t kScoreChunkTile = 64;

// The most vocabulary columns one head block has.
int64_t widest_head_block(const Model::Impl& m) {
  int64_t widest = 0;
  for (const HeadBlock& b : m.tensors.head_blocks) widest = std::max(widest, b.count);
  return widest;
}

uint32_t score_chunk_rows(const Model::Impl& m, uint32_t len) {
  const int64_t widest = widest_head_block(m);
  const uint64_t bytes = std::min(kScoreChunkBytes, m.ctx.device().caps.max_storage_buffer_range);
  uint64_t rows = bytes / (uint64_t(widest) * dtype_size(m.dtype));
  if (rows >= kScoreChunkTile) rows = rows / kScoreChunkTile * kScoreChunkTile;
  return uint32_t(std::clamp<uint64_t>(rows, 1, len));
}

bool has_kind(const ModelConfig& c, LayerKind kind) {
  return std::find(c.layer_kinds.begin(), c.layer_kinds.end(), kind) != c.layer_kinds.end();
}

Status allocate(Context& ctx, const Model::Impl& m, Graph& g) {
  const ModelConfig& c = m.config;
  const int64_t L = g.len, D = c.width, H = c.heads, Dh = c.head_dim(), F = c.ffn_width, V = c.vocab;
  const DType dt = m.dtype;
  auto make = [&](Tensor& t, DType type, std::vector<int64_t> shape, const char* name,
                  MemoryPool pool = MemoryPool::kActivations) -> Status {
    RILL_ASSIGN_OR_RETURN(t, ctx.tensor(type, std::move(shape), std::string("lm.") + name, pool));
    return Status::ok();
  };
  // What run_graph writes before each run: host-visible, so that a decoding step's token and
  // position cost a memcpy each, not a copy submitted and waited for (a discrete GPU's round trip).
  RILL_RETURN_IF_ERROR(make(g.ids, DType::kU32, {L}, "ids", MemoryPool::kUploads));
  RILL_RETURN_IF_ERROR(make(g.pos, DType::kU32, {1}, "pos", MemoryPool::kUploads));
  RILL_RETURN_IF_ERROR(make(g.errors, DType::kU32, {1}, "errors"));
  // f16 models keep NormAttention's output in f32 (o32, merged32); o and merged serve the other kinds.
  const bool wide_norm_output = dt == DType::kF16 && has_kind(c, LayerKind::kNorm);
  const bool narrow_output = !wide_norm_output || has_kind(c, LayerKind::kDiag) || has_kind(c, LayerKind::kSoftmax);
  for (Tensor* t : {&g.x[0], &g.x[1], &g.u, &g.h, &g.g, &g.mixed, &g.attn_out, &g.ffn_out})
    RILL_RETURN_IF_ERROR(make(*t, dt, {L, D}, "residual"));
  if (narrow_output) RILL_RETURN_IF_ERROR(make(g.merged, dt, {L, D}, "residual"));
  RILL_RETURN_IF_ERROR(make(g.rstd, DType::kF32, {L}, "rstd"));
  for (Tensor* t : {&g.q, &g.k, &g.v}) RILL_RETURN_IF_ERROR(make(*t, dt, {1, H, L, Dh}, "qkvo"));
  if (narrow_output) RILL_RETURN_IF_ERROR(make(g.o, dt, {1, H, L, Dh}, "qkvo"));
  if (wide_norm_output) {
    RILL_RETURN_IF_ERROR(make(g.o32, DType::kF32, {1, H, L, Dh}, "o32"));
    RILL_RETURN_IF_ERROR(make(g.merged32, DType::kF32, {L, D}, "merged32"));
  }
  if (!c.lrpe_layers.empty()) {
    for (Tensor* t : {&g.q2, &g.k2}) RILL_RETURN_IF_ERROR(make(*t, dt, {1, H, L, 2 * Dh}, "lrpe_qk"));
    g.lrpe_base.resize(c.layers);
    for (uint32_t l : c.lrpe_layers)
      RILL_RETURN_IF_ERROR(make(g.lrpe_base[l], DType::kF32, {H * Dh, 2}, "lrpe_base", MemoryPool::kUploads));
  }
  if (c.output_gate)
    for (Tensor* t : {&g.gate, &g.gated}) RILL_RETURN_IF_ERROR(make(*t, dt, {L, D}, "gate"));
  if (!g.decode && has_kind(c, LayerKind::kDiag)) RILL_RETURN_IF_ERROR(make(g.lse, DType::kF32, {1, H, L}, "lse"));
  for (Tensor* t : {&g.a, &g.b, &g.hidden}) RILL_RETURN_IF_ERROR(make(*t, dt, {L, F}, "ffn"));
  if (L > 1) RILL_RETURN_IF_ERROR(make(g.last, dt, {1, D}, "last"));
  RILL_RETURN_IF_ERROR(make(g.logits, dt, {1, V}, "logits"));
  if (g.scored) {
    g.head_rows = score_chunk_rows(m, g.len);
    const int64_t widest = widest_head_block(m);
    RILL_RETURN_IF_ERROR(make(g.targets, DType::kU32, {L}, "targets", MemoryPool::kUploads));
    RILL_RETURN_IF_ERROR(make(g.head_rows_in, dt, {int64_t(g.head_rows), D}, "head_rows"));
    RILL_RETURN_IF_ERROR(make(g.head_chunk, dt, {int64_t(g.head_rows) * widest}, "head_chunk"));
    RILL_RETURN_IF_ERROR(make(g.running, DType::kF32, {L, int64_t(gpu::kLogProbRunningWords)}, "running"));
    RILL_RETURN_IF_ERROR(make(g.log_probs, DType::kF32, {L}, "log_probs"));
  }
  return Status::ok();
}

Status record_mixer(const Model::Impl& m, StateTensors& state, Graph& g, size_t i) {
  const ModelConfig& c = m.config;
  const LayerTensors& l = m.tensors.layers[i];
  Sequence& seq = *g.seq;
  switch (l.kind) {
    case LayerKind::kNorm: {
      ops::LinearAttentionOptions o{.causal = true, .feature_map = c.feature_map,
                                    .decay = l.decay.valid() ? &l.decay : nullptr,
                                    .chunk = c.chunk, .continue_state = true};
      const Tensor *q = &g.q, *k = &g.k;
      if (l.lrpe_fine.valid()) {  // the feature map goes first, then the rotation (2 Dh features)
        RILL_RETURN_IF_ERROR(lrpe(seq, g.q, g.lrpe_base[i], l.lrpe_coarse, l.lrpe_fine, g.q2, c.feature_map));
        RILL_RETURN_IF_ERROR(lrpe(seq, g.k, g.lrpe_base[i], l.lrpe_coarse, l.lrpe_fine, g.k2, c.feature_map));
        q = &g.q2, k = &g.k2;
        o.feature_map = ops::FeatureMap::kIdentity;
      }
      const Tensor& out = g.o32.valid() ? g.o32 : g.o;
      if (g.decode) return ops::linear_attention_step(seq, *q, *k, g.v, out, state.la_state[i], o);
      return ops::linear_attention_forward(seq, *q, *k, g.v, out, state.la_state[i], o);
    }
    case LayerKind::kDiag: {
      if (g.decode) {
        RILL_RETURN_IF_ERROR(kv_append(seq, g.k, g.v, g.pos, state.cache_k[i], state.cache_v[i], c.block));
        return attend(seq, g.q, state.cache_k[i], state.cache_v[i], g.pos, g.o, c.block, c.block - 1);
      }
      RILL_RETURN_IF_ERROR(ops::block_attention_forward(seq, g.q, g.k, g.v, g.o, g.lse,
                                                        {.block = c.block, .causal = true}));
      // Segments start on block boundaries, so the last len % block positions are the partial
      // block that decoding continues: keep their keys and values.
      const uint32_t tail = g.len % c.block;
      if (tail == 0) return Status::ok();
      RILL_RETURN_IF_ERROR(copy_rows(seq, g.k, g.len - tail, state.cache_k[i], 0, tail));
      return copy_rows(seq, g.v, g.len - tail, state.cache_v[i], 0, tail);
    }
    case LayerKind::kSoftmax: {
      const uint32_t cap = uint32_t(state.cache_k[i].shape()[1]);
      RILL_RETURN_IF_ERROR(kv_append(seq, g.k, g.v, g.pos, state.cache_k[i], state.cache_v[i], 0));
      return attend(seq, g.q, state.cache_k[i], state.cache_v[i], g.pos, g.o, 0, cap - 1);
    }
  }
  return internal_error("lm: unknown layer kind");
}

// Every row's log-probability of its next token: the head over a chunk of rows at a time (copied
// out, so a chunk may start on any row), a block of the vocabulary at a time, each block's logits
// folded into the row's softmax sums.
Status record_scores(const Model::Impl& m, Graph& g) {
  Sequence& seq = *g.seq;
  const auto& blocks = m.tensors.head_blocks;
  for (uint32_t first = 0; first < g.len; first += g.head_rows) {
    const uint32_t rows = std::min(g.head_rows, g.len - first);
    RILL_ASSIGN_OR_RETURN(const Tensor x, g.head_rows_in.rows(0, rows));
    RILL_RETURN_IF_ERROR(copy_rows(seq, g.u, first, x, 0, rows));
    for (size_t i = 0; i < blocks.size(); ++i) {
      RILL_ASSIGN_OR_RETURN(const Tensor flat, g.head_chunk.rows(0, int64_t(rows) * blocks[i].count));
      RILL_ASSIGN_OR_RETURN(const Tensor logits, flat.reshaped({int64_t(rows), blocks[i].count}));
      RILL_RETURN_IF_ERROR(head_product(seq, x, blocks[i], logits));
      RILL_RETURN_IF_ERROR(token_log_probs(seq, logits, g.targets, g.running, g.log_probs,
                                           {.row_offset = first,
                                            .first = uint32_t(blocks[i].first),
                                            .vocab = m.config.vocab,
                                            .first_block = i == 0,
                                            .last_block = i + 1 == blocks.size()}));
    }
  }
  RILL_ASSIGN_OR_RETURN(g.log_probs_id, seq.download(g.log_probs));
  return Status::ok();
}

Status record(const Model::Impl& m, StateTensors& state, Graph& g) {
  const ModelConfig& c = m.config;
  const ModelTensors& w = m.tensors;
  Sequence& seq = *g.seq;
  const float eps = c.norm_eps;
  if (w.embed_t.valid()) {
    RILL_RETURN_IF_ERROR(ops::embedding_forward(seq, g.ids, w.embed_t, g.x[0], g.errors, c.embed_scale));
  } else {
    RILL_RETURN_IF_ERROR(ops::embedding_forward(seq, g.ids, w.embed, g.x[0], g.errors, c.embed_scale));
  }
  RILL_RETURN_IF_ERROR(ops::rmsnorm_forward(seq, g.x[0], gain_of(w.layers[0].attn_norm), g.u, g.rstd, eps));
  int cur = 0;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerTensors& l = w.layers[i];
    // Token mixer on u = Norm(x).
    RILL_RETURN_IF_ERROR(linear(seq, g.u, l.wq, g.q));
    RILL_RETURN_IF_ERROR(linear(seq, g.u, l.wk, g.k));
    RILL_RETURN_IF_ERROR(linear(seq, g.u, l.wv, g.v));
    RILL_RETURN_IF_ERROR(record_mixer(m, state, g, i));
    const Tensor* mixed = &g.merged;
    if (l.kind == LayerKind::kNorm && g.o32.valid()) {  // f16: normalized in f32, then stored in f16
      RILL_RETURN_IF_ERROR(merge_heads(seq, g.o32, g.merged32));
      RILL_ASSIGN_OR_RETURN(const Tensor normed, g.o32.reshaped({g.len, c.width}));  // o32 is read: reuse it
      RILL_RETURN_IF_ERROR(ops::rmsnorm_forward(seq, g.merged32, gain_of(l.out_norm_f32), normed, g.rstd, eps));
      RILL_RETURN_IF_ERROR(ops::convert(seq, normed, g.mixed));
      mixed = &g.mixed;
    } else if (l.kind == LayerKind::kNorm) {
      RILL_RETURN_IF_ERROR(merge_heads(seq, g.o, g.merged));
      RILL_RETURN_IF_ERROR(ops::rmsnorm_forward(seq, g.merged, gain_of(l.out_norm), g.mixed, g.rstd, eps));
      mixed = &g.mixed;
    } else {
      RILL_RETURN_IF_ERROR(merge_heads(seq, g.o, g.merged));
    }
    if (c.output_gate) {  // o = (u Wgate) * o
      RILL_RETURN_IF_ERROR(linear(seq, g.u, l.wgate, g.gate));
      RILL_RETURN_IF_ERROR(ops::glu_forward(seq, g.gate, *mixed, g.gated, ops::GluActivation::kIdentity));
      mixed = &g.gated;
    }
    RILL_RETURN_IF_ERROR(linear(seq, *mixed, l.wo, g.attn_out));
    // h = x + mixer, g = Norm(h); then the GLU channel mixer.
    RILL_RETURN_IF_ERROR(ops::rmsnorm_residual_forward(seq, g.attn_out, g.x[cur], gain_of(l.ffn_norm), g.h, g.g,
                                                       g.rstd, eps));
    RILL_RETURN_IF_ERROR(linear(seq, g.g, l.wu, g.a));
    RILL_RETURN_IF_ERROR(linear(seq, g.g, l.wg, g.b));
    RILL_RETURN_IF_ERROR(ops::glu_forward(seq, g.a, g.b, g.hidden, c.glu_activation));
    RILL_RETURN_IF_ERROR(linear(seq, g.hidden, l.wd, g.ffn_out));
    // x = h + ffn, u = the next layer's Norm(x) (the final norm after the last layer).
    const Tensor* next_gain = i + 1 < w.layers.size() ? gain_of(w.layers[i + 1].attn_norm) : gain_of(w.final_norm);
    RILL_RETURN_IF_ERROR(ops::rmsnorm_residual_forward(seq, g.ffn_out, g.h, next_gain, g.x[1 - cur], g.u, g.rstd, eps));
    cur = 1 - cur;
  }
  const Tensor* last = &g.u;
  if (g.len > 1) {
    RILL_RETURN_IF_ERROR(copy_rows(seq, g.u, g.len - 1, g.last, 0, 1));
    last = &g.last;
  }
  for (const HeadBlock& b : w.head_blocks) {  // each block's columns of the logits
    RILL_ASSIGN_OR_RETURN(Tensor part, logits_of(g.logits, b));
    RILL_RETURN_IF_ERROR(head_product(seq, *last, b, part));
  }
  RILL_ASSIGN_OR_RETURN(g.logits_id, seq.download(g.logits));
  if (g.scored) RILL_RETURN_IF_ERROR(record_scores(m, g));
  return seq.finish();
}

}  // namespace

Result<std::unique_ptr<Graph>> make_graph(const Model::Impl& m, StateTensors& state, uint32_t len, GraphForm form) {
  auto g = std::make_unique<Graph>();
  g->len = len;
  const bool decode = form == GraphForm::kDecode;
  g->decode = decode;
  g->scored = form == GraphForm::kScore;
  // Everything the graph allocates (its tensors and the recording's workspaces) is its own.
  const uint64_t used_before = m.ctx.memory_stats().used_bytes;
  RILL_ASSIGN_OR_RETURN(Sequence seq, m.ctx.sequence({.label = decode      ? "lm decode"
                                                               : g->scored ? "lm score segment"
                                                                           : "lm prefill segment"}));
  g->seq.emplace(std::move(seq));
  std::optional<ops::plan::LmDecodePlan> fused;
  if (decode) {
    RILL_ASSIGN_OR_RETURN(const ops::plan::LmDecodePlan plan,
                          ops::plan::lm_decode(ops::plan::traits_of(*g->seq), decode_shape(m)));
    if (plan.fused) fused = plan;
  }
  if (fused) {
    g->fused = true;
    RILL_RETURN_IF_ERROR(record_fused_decode(m, state, *g, *fused));
  } else {
    RILL_RETURN_IF_ERROR(allocate(m.ctx, m, *g));
    RILL_RETURN_IF_ERROR(record(m, state, *g));
  }
  g->device_bytes = m.ctx.memory_stats().used_bytes - used_before;
  return g;
}

namespace {

Status upload_inputs(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens, uint64_t position) {
  if (tokens.size() != g.len) return internal_error("lm: graph length differs from the tokens");
  RILL_RETURN_IF_ERROR(m.ctx.upload(
      g.ids, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tokens.data()), tokens.size_bytes())));
  const uint32_t pos = uint32_t(position);
  RILL_RETURN_IF_ERROR(m.ctx.upload(g.pos, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&pos), 4)));
  for (size_t i = 0; i < g.lrpe_base.size(); ++i)
    if (g.lrpe_base[i].valid())
      RILL_RETURN_IF_ERROR(
          m.ctx.upload_floats(g.lrpe_base[i], lrpe_rotations(m.tensors.layers[i].lrpe_theta, position, 1, 1)));
  return Status::ok();
}

}  // namespace

Result<std::vector<float>> run_graph(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens,
                                     uint64_t position, bool& submitted) {
  RILL_RETURN_IF_ERROR(upload_inputs(m, g, tokens, position));
  RILL_RETURN_IF_ERROR(g.seq->submit());
  submitted = true;
  RILL_RETURN_IF_ERROR(g.seq->wait());
  return g.seq->read_floats(g.logits_id);
}

Result<std::vector<float>> run_scored_graph(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens,
                                            std::span<const uint32_t> targets, uint64_t position,
                                            std::vector<float>& log_probs, bool& submitted) {
  if (!g.scored || targets.size() != g.len) return internal_error("lm: not a scoring graph of the tokens' length");
  RILL_RETURN_IF_ERROR(upload_inputs(m, g, tokens, position));
  RILL_RETURN_IF_ERROR(m.ctx.upload(
      g.targets, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(targets.data()), targets.size_bytes())));
  RILL_RETURN_IF_ERROR(g.seq->submit());
  submitted = true;
  RILL_RETURN_IF_ERROR(g.seq->wait());
  RILL_ASSIGN_OR_RETURN(log_probs, g.seq->read_floats(g.log_probs_id));
  return g.seq->read_floats(g.logits_id);
}

}  // namespace rill::lm::detail
