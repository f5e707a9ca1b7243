// Recording of the fused decoding step (decode_fused.hpp). Between the dispatches of a layer the
// residual row travels as the previous kernel's input plus f32 partial rows (one per head or FFN
// slice), summed in a fixed order by the kernel that needs them: no cross-workgroup sync, and the
// same bits on every run.
#include "lm/decode_fused.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/op_common.hpp"
#include "rill/ops/elementwise.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::lm::detail {
namespace {

using ops::plan::LmDecodePlan;

// The kernels' weight form: "" (dense, the storage type), "_w16", "_q8" or "_q4", and the int8 or
// int4 group.
struct WeightForm {
  std::string suffix;
  uint32_t group = 1;
};

// In storage buffers, or read as texels where the plan says (kernel suffixes _tx, _q8_tx, _w16_tx).
WeightForm form_of(const ops::PackedWeights& p, const LmDecodePlan& plan) {
  if (!p.valid()) return plan.texel_weights ? WeightForm{"_tx", 1} : WeightForm{};
  const std::string suffix =
      std::string("_") + ops::detail::packed_kernel_form(p.format) + (plan.texel_words ? "_tx" : "");
  return {suffix, ops::has_scales(p.format) ? p.group : 1u};
}

// The form every matrix of one dispatch shares (the model packs all its linear layers alike). A
// group of a whole matrix's rows (packing clamps a group to the rows: a model narrower than its
// group) reads the same under any larger group, so the dispatch takes the largest.
Result<WeightForm> common_form(std::initializer_list<const LinearWeight*> weights, const LmDecodePlan& plan,
                               const char* op) {
  WeightForm common = form_of((*weights.begin())->packed, plan);
  for (const LinearWeight* w : weights) common.group = std::max(common.group, form_of(w->packed, plan).group);
  for (const LinearWeight* w : weights) {
    const WeightForm f = form_of(w->packed, plan);
    const bool whole_rows = w->packed.valid() && int64_t(f.group) >= w->packed.rows;
    if (f.suffix != common.suffix || (f.group != common.group && !whole_rows))
      return internal_error(std::string(op) + ": the layer's weights are not all in one form");
  }
  return common;
}

void bind(std::vector<const Tensor*>& b, const Tensor& dense, const ops::PackedWeights& packed) {
  if (!packed.valid()) {
    b.push_back(&dense);
    return;
  }
  b.push_back(&packed.words);
  if (ops::has_scales(packed.format)) b.push_back(&packed.scales);
}
void bind(std::vector<const Tensor*>& b, const LinearWeight& w) { bind(b, w.dense, w.packed); }

uint64_t weight_bytes(std::initializer_list<const LinearWeight*> weights) {
  uint64_t n = 0;
  for (const LinearWeight* w : weights) n += w->size_bytes();
  return n;
}

// A tensor that may be absent (gains under SRMSNorm, decay) or a read-only stand-in that the
// kernel never reads (its spec constant says so).
const Tensor& or_else(const Tensor& t, const Tensor& stand_in) { return t.valid() ? t : stand_in; }

Status allocate(const Model::Impl& m, Graph& g, const LmDecodePlan& plan) {
  const ModelConfig& c = m.config;
  auto make = [&](Tensor& t, DType type, std::vector<int64_t> shape, const char* name,
                  MemoryPool pool = MemoryPool::kActivations) -> Status {
    RILL_ASSIGN_OR_RETURN(t, m.ctx.tensor(type, std::move(shape), std::string("lm.decode.") + name, pool));
    return Status::ok();
  };
  // What run_graph writes before each token: host-visible (graph.cpp says why).
  RILL_RETURN_IF_ERROR(make(g.ids, DType::kU32, {1}, "ids", MemoryPool::kUploads));
  RILL_RETURN_IF_ERROR(make(g.pos, DType::kU32, {1}, "pos", MemoryPool::kUploads));
  RILL_RETURN_IF_ERROR(make(g.errors, DType::kU32, {1}, "errors"));
  RILL_RETURN_IF_ERROR(make(g.resid, m.dtype, {1, int64_t(c.width)}, "resid"));
  RILL_RETURN_IF_ERROR(make(g.layer_in, m.dtype, {1, int64_t(c.width)}, "layer_in"));
  RILL_RETURN_IF_ERROR(make(g.parts_mix, DType::kF32, {int64_t(c.heads), int64_t(c.width) + 1}, "parts_mix"));
  const int64_t slices = (c.ffn_width + plan.ffn_slice - 1) / plan.ffn_slice;
  RILL_RETURN_IF_ERROR(make(g.parts_ffn, DType::kF32, {slices, int64_t(c.width)}, "parts_ffn"));
  RILL_RETURN_IF_ERROR(make(g.logits, m.dtype, {1, int64_t(c.vocab)}, "logits"));
  g.lrpe_base.resize(c.layers);
  for (uint32_t l : c.lrpe_layers)
    RILL_RETURN_IF_ERROR(make(g.lrpe_base[l], DType::kF32, {int64_t(c.width), 2}, "lrpe_base", MemoryPool::kUploads));
  return Status::ok();
}

// The specialization constants of decode_common.glsl's products, which every fused kernel takes
// from the plan, followed by the kernel's own.
std::vector<SpecValue> product_spec(const LmDecodePlan& plan, std::initializer_list<SpecValue> own) {
  std::vector<SpecValue> spec = {gpu::spec("WG_SIZE", plan.workgroup),   gpu::spec("LANE_GROUPS", plan.lane_groups),
                                 gpu::spec("ROW_BATCH", plan.row_batch), gpu::spec("X_SHUFFLE", plan.x_shuffle),
                                 gpu::spec("IN_MAX", plan.in_max),       gpu::spec("OUT_MAX", plan.out_max)};
  spec.insert(spec.end(), own);
  return spec;
}

Status mix(const Model::Impl& m, StateTensors& state, Graph& g, const LmDecodePlan& plan, size_t i) {
  const char* op = "lm decode mixer";
  const ModelConfig& c = m.config;
  const LayerTensors& l = m.tensors.layers[i];
  const bool softmax = l.kind != LayerKind::kNorm, gate = c.output_gate;
  const LinearWeight& wgate = gate ? l.wgate : l.wq;
  RILL_ASSIGN_OR_RETURN(WeightForm form, common_form({&l.wq, &l.wk, &l.wv, &wgate, &l.wo}, plan, op));
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(g.resid, op));
  const uint32_t dh = c.head_dim(), D = c.width, H = c.heads;
  std::vector<const Tensor*> b = {
      &g.resid, &g.parts_ffn, &g.layer_in, &or_else(l.attn_norm, g.resid), &or_else(l.out_norm, g.resid), &g.parts_mix};
  std::vector<SpecValue> spec =
      product_spec(plan, {gpu::spec("DH", dh), gpu::spec("HAS_GAIN", l.attn_norm.valid()), gpu::spec("HAS_GATE", gate),
                          gpu::spec("OUT_NORM", l.kind == LayerKind::kNorm)});
  uint32_t cap = 0;
  uint64_t keys = 0;
  if (softmax) {
    b.insert(b.end(), {&state.cache_k[i], &state.cache_v[i], &g.pos});
    cap = uint32_t(state.cache_k[i].shape()[1]);
    keys = l.kind == LayerKind::kDiag ? c.block : cap;
    spec.push_back(gpu::spec("BLOCK", l.kind == LayerKind::kDiag ? c.block : 0u));
  } else {
    b.insert(b.end(), {&state.la_state[i], &or_else(l.decay, g.resid), &or_else(g.lrpe_base[i], g.resid)});
    spec.insert(spec.end(), {gpu::spec("FEATURE", uint32_t(c.feature_map)), gpu::spec("HAS_DECAY", l.decay.valid()),
                             gpu::spec("HAS_LRPE", g.lrpe_base[i].valid())});
  }
  for (const LinearWeight* w : {&l.wq, &l.wk, &l.wv, &wgate, &l.wo}) bind(b, *w);
  const gpu::DecodeMixPush push{D,          i == 0 ? 0u : uint32_t(g.parts_ffn.shape()[0]),
                                cap,        form.group,
                                c.norm_eps, float(1.0 / std::sqrt(double(dh)))};
  const uint64_t features = g.lrpe_base[i].valid() ? 2 * dh : dh;
  return g.seq->dispatch(
      {.kernel = "lm/decode_mix_" + std::string(softmax ? "softmax" : "linear") + form.suffix + "_" + suffix,
       .bindings = std::move(b),
       .push = push_bytes(push),
       .groups = {H, 1, 1},
       .spec = std::move(spec),
       .flops = 2ull * D * D * (gate ? 5 : 4) + 4ull * H * (softmax ? keys * dh : features * dh),
       .bytes = weight_bytes({&l.wq, &l.wk, &l.wv, &l.wo}) + (gate ? l.wgate.size_bytes() : 0) +
                (softmax ? 2 * keys * D * dtype_size(m.dtype) : 8ull * H * features * dh)});
}

Status ffn(const Model::Impl& m, Graph& g, const LmDecodePlan& plan, size_t i) {
  const char* op = "lm decode FFN";
  const ModelConfig& c = m.config;
  const LayerTensors& l = m.tensors.layers[i];
  RILL_ASSIGN_OR_RETURN(WeightForm form, common_form({&l.wu, &l.wg, &l.wd}, plan, op));
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(g.resid, op));
  std::vector<const Tensor*> b = {&g.layer_in, &g.parts_mix, &g.resid, &or_else(l.ffn_norm, g.layer_in), &g.parts_ffn};
  for (const LinearWeight* w : {&l.wu, &l.wg, &l.wd}) bind(b, *w);
  const uint32_t slices = uint32_t(g.parts_ffn.shape()[0]);
  const gpu::DecodeFfnPush push{c.width, c.ffn_width, c.heads, plan.ffn_slice, form.group, c.norm_eps};
  return g.seq->dispatch({.kernel = "lm/decode_ffn" + form.suffix + "_" + suffix,
                          .bindings = std::move(b),
                          .push = push_bytes(push),
                          .groups = {slices, 1, 1},
                          .spec = product_spec(plan, {gpu::spec("ACT", uint32_t(c.glu_activation)),
                                                      gpu::spec("HAS_GAIN", l.ffn_norm.valid()),
                                                      gpu::spec("OUT_NORM", l.kind == LayerKind::kNorm)}),
                          .flops = 6ull * c.width * c.ffn_width,
                          .bytes = weight_bytes({&l.wu, &l.wg, &l.wd})});
}

Status logits(const Model::Impl& m, Graph& g, const LmDecodePlan& plan) {
  const char* op = "lm decode logits";
  const ModelConfig& c = m.config;
  const ModelTensors& w = m.tensors;
  RILL_ASSIGN_OR_RETURN(std::string suffix, ops::detail::float_suffix(g.resid, op));
  // The head in blocks of the vocabulary: packed (its own, or the tied embedding already [width,
  // vocab]) or dense (the tied embedding's rows [count, width] read transposed, or the head's
  // columns), a dispatch per block, each computing the residual's norm again (a row: negligible).
  auto dispatch = [&](const Tensor& dense, const ops::PackedWeights& packed, bool transposed, const Tensor& out,
                      uint32_t vocab) -> Status {
    std::vector<const Tensor*> b = {&g.resid, &g.parts_ffn, &or_else(w.final_norm, g.resid), &out};
    bind(b, dense, packed);
    const WeightForm form = form_of(packed, plan);
    const gpu::DecodeLogitsPush push{c.width,    vocab,     uint32_t(g.parts_ffn.shape()[0]), plan.logit_columns,
                                     form.group, c.norm_eps};
    return g.seq->dispatch(
        {.kernel = "lm/decode_logits" + form.suffix + "_" + suffix,
         .bindings = std::move(b),
         .push = push_bytes(push),
         .groups = {(vocab + plan.logit_columns - 1) / plan.logit_columns, 1, 1},
         .spec = product_spec(plan, {gpu::spec("HAS_GAIN", w.final_norm.valid()), gpu::spec("TRANSPOSED", transposed)}),
         .flops = 2ull * c.width * vocab,
         .bytes = packed.valid() ? packed.size_bytes() : dense.size_bytes()});
  };
  for (const HeadBlock& block : w.head_blocks) {
    RILL_ASSIGN_OR_RETURN(Tensor part, logits_of(g.logits, block));
    RILL_RETURN_IF_ERROR(dispatch(block.weight, block.packed, block.transposed, part, uint32_t(block.count)));
  }
  return Status::ok();
}

}  // namespace

ops::plan::LmDecodeShape decode_shape(const Model::Impl& m) {
  const ModelConfig& c = m.config;
  ops::plan::LmDecodeShape s{.width = c.width,
                             .heads = c.heads,
                             .head_dim = c.head_dim(),
                             .ffn = c.ffn_width,
                             .vocab = c.vocab,
                             .max_keys = 0,
                             .lrpe = !c.lrpe_layers.empty()};
  for (LayerKind kind : c.layer_kinds) {
    if (kind == LayerKind::kDiag) s.max_keys = std::max<uint64_t>(s.max_keys, c.block);
    if (kind == LayerKind::kSoftmax) s.max_keys = std::max<uint64_t>(s.max_keys, m.options.softmax_capacity);
  }
  const auto& l0 = m.tensors.layers.front();
  s.dense_f32 = m.dtype == DType::kF32 && !l0.wq.packed.valid();
  s.f32_activations = m.dtype == DType::kF32;
  s.largest_weight = uint64_t(c.width) * std::max({c.width, c.ffn_width, c.vocab});
  for (const HeadBlock& block : m.tensors.head_blocks)
    s.widest_head_block = std::max(s.widest_head_block, uint32_t(block.count));
  if (l0.wq.packed.valid() && ops::has_scales(l0.wq.packed.format)) {
    s.bindings_per_weight = 2;
    s.int8_group = l0.wq.packed.group;
  }
  s.f16_words = l0.wq.packed.valid() && l0.wq.packed.format == ops::WeightFormat::kF16;
  s.int4_words = l0.wq.packed.valid() && l0.wq.packed.format == ops::WeightFormat::kInt4;
  return s;
}

Status record_fused_decode(const Model::Impl& m, StateTensors& state, Graph& g, const LmDecodePlan& plan) {
  const ModelConfig& c = m.config;
  const ModelTensors& w = m.tensors;
  RILL_RETURN_IF_ERROR(allocate(m, g, plan));
  Sequence& seq = *g.seq;
  if (w.embed_t.valid()) {
    RILL_RETURN_IF_ERROR(ops::embedding_forward(seq, g.ids, w.embed_t, g.resid, g.errors, c.embed_scale));
  } else {
    RILL_RETURN_IF_ERROR(ops::embedding_forward(seq, g.ids, w.embed, g.resid, g.errors, c.embed_scale));
  }
  for (size_t i = 0; i < w.layers.size(); ++i) {
    RILL_RETURN_IF_ERROR(mix(m, state, g, plan, i));
    RILL_RETURN_IF_ERROR(ffn(m, g, plan, i));
  }
  RILL_RETURN_IF_ERROR(logits(m, g, plan));
  RILL_ASSIGN_OR_RETURN(g.logits_id, seq.download(g.logits));
  return seq.finish();
}

}  // namespace rill::lm::detail
