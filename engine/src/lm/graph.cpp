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

namespace rill::lm::detail {
namespace {

const Tensor* gain_of(const Tensor& t) { return t.valid() ? &t : nullptr; }

// y = x W for a linear layer's weight in either form.
Status linear(Sequence& seq, const Tensor& x, const LinearWeight& w, const Tensor& y) {
  return w.packed.valid() ? ops::matmul(seq, x, w.packed, y) : ops::matmul(seq, x, w.dense, y);
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
  for (Tensor* t : {&g.x[0], &g.x[1], &g.u, &g.h, &g.g, &g.merged, &g.mixed, &g.attn_out, &g.ffn_out})
    RILL_RETURN_IF_ERROR(make(*t, dt, {L, D}, "residual"));
  RILL_RETURN_IF_ERROR(make(g.rstd, DType::kF32, {L}, "rstd"));
  for (Tensor* t : {&g.q, &g.k, &g.v, &g.o}) RILL_RETURN_IF_ERROR(make(*t, dt, {1, H, L, Dh}, "qkvo"));
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
      if (g.decode) return ops::linear_attention_step(seq, *q, *k, g.v, g.o, state.la_state[i], o);
      return ops::linear_attention_forward(seq, *q, *k, g.v, g.o, state.la_state[i], o);
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
    RILL_RETURN_IF_ERROR(merge_heads(seq, g.o, g.merged));
    const Tensor* mixed = &g.merged;
    if (l.kind == LayerKind::kNorm) {
      RILL_RETURN_IF_ERROR(ops::rmsnorm_forward(seq, g.merged, gain_of(l.out_norm), g.mixed, g.rstd, eps));
      mixed = &g.mixed;
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
    if (b.packed.valid()) {
      RILL_RETURN_IF_ERROR(ops::matmul(seq, *last, b.packed, part));
    } else {
      RILL_RETURN_IF_ERROR(ops::matmul(seq, *last, b.weight, part, {.transpose_b = b.transposed}));
    }
  }
  RILL_ASSIGN_OR_RETURN(g.logits_id, seq.download(g.logits));
  return seq.finish();
}

}  // namespace

Result<std::unique_ptr<Graph>> make_graph(const Model::Impl& m, StateTensors& state, uint32_t len, bool decode) {
  auto g = std::make_unique<Graph>();
  g->len = len;
  g->decode = decode;
  // Everything the graph allocates (its tensors and the recording's workspaces) is its own.
  const uint64_t used_before = m.ctx.memory_stats().used_bytes;
  RILL_ASSIGN_OR_RETURN(Sequence seq, m.ctx.sequence({.label = decode ? "lm decode" : "lm prefill segment"}));
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

Result<std::vector<float>> run_graph(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens, uint64_t position) {
  if (tokens.size() != g.len) return internal_error("lm: graph length differs from the tokens");
  RILL_RETURN_IF_ERROR(m.ctx.upload(
      g.ids, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tokens.data()), tokens.size_bytes())));
  const uint32_t pos = uint32_t(position);
  RILL_RETURN_IF_ERROR(m.ctx.upload(g.pos, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&pos), 4)));
  for (size_t i = 0; i < g.lrpe_base.size(); ++i)
    if (g.lrpe_base[i].valid())
      RILL_RETURN_IF_ERROR(
          m.ctx.upload_floats(g.lrpe_base[i], lrpe_rotations(m.tensors.layers[i].lrpe_theta, position, 1, 1)));
  RILL_RETURN_IF_ERROR(g.seq->run());
  return g.seq->read_floats(g.logits_id);
}

}  // namespace rill::lm::detail
