// Model: validates options and uploads the weights (straight from the mapped file when the stored
// dtype is the model's precision, converted otherwise).
#include <algorithm>
#include <cmath>
#include <new>
#include <span>
#include <string>

#include "access.hpp"
#include "core/host_memory_guard.hpp"
#include "core/log.hpp"
#include "kernel_plan.hpp"
#include "lm/lm_internal.hpp"
#include "lm/lm_kernels.hpp"
#include "lm/model_impl.hpp"
#include "ops/op_common.hpp"
#include "rill/half.hpp"

namespace rill::lm {

namespace {

// From 65520 on a float rounds to an f16 Inf, and the logits would come out NaN: refused at
// creation for an f16 tensor.
Status check_f16_range(const std::string& name, std::span<const float> values, DType dtype) {
  if (dtype != DType::kF16) return Status::ok();
  for (size_t i = 0; i < values.size(); ++i)
    if (std::abs(values[i]) >= 65520.0f)
      return out_of_range("lm model: weight '" + name + "' holds " + std::to_string(values[i]) + " at flat index " +
                          std::to_string(i) + ", past f16's largest value (65504): load the model in f32");
  return Status::ok();
}

Result<Tensor> upload_weight(Context& ctx, const Weights& weights, const std::string& name, std::vector<int64_t> shape,
                             DType dtype) {
  RILL_ASSIGN_OR_RETURN(Tensor t, ctx.tensor(dtype, std::move(shape), name, MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(TensorDType stored, weights.dtype(name));
  const bool same = (dtype == DType::kF32 && stored == TensorDType::kF32) ||
                    (dtype == DType::kF16 && stored == TensorDType::kF16);
  if (same) {
    RILL_ASSIGN_OR_RETURN(auto bytes, weights.bytes(name));
    RILL_RETURN_IF_ERROR(ctx.upload(t, bytes));
  } else {
    RILL_ASSIGN_OR_RETURN(std::vector<float> values, weights.floats(name));
    RILL_RETURN_IF_ERROR(check_f16_range(name, values, dtype));
    RILL_RETURN_IF_ERROR(ctx.upload_floats(t, values));
  }
  return t;
}

// Whether the options pack the weights: not when the precision already gives that form (f16
// weights in an f16 model are plain f16 tensors).
bool packs_weights(const ModelOptions& options, DType dtype) {
  return options.weights == WeightStorage::kInt8 || options.weights == WeightStorage::kInt4 ||
         (options.weights == WeightStorage::kF16 && dtype == DType::kF32);
}

ops::WeightFormat packed_format(const ModelOptions& options) {
  if (options.weights == WeightStorage::kInt8) return ops::WeightFormat::kInt8;
  return options.weights == WeightStorage::kInt4 ? ops::WeightFormat::kInt4 : ops::WeightFormat::kF16;
}
// Rows per scale of the packed format (unused by f16).
uint32_t packed_group(const ModelOptions& options) {
  return options.weights == WeightStorage::kInt4 ? options.int4_group : options.int8_group;
}

Result<ops::PackedWeights> upload_packed(Context& ctx, std::vector<float> values, const std::string& name,
                                         const std::vector<int64_t>& shape, const ModelOptions& options) {
  const ops::WeightFormat format = packed_format(options);
  RILL_ASSIGN_OR_RETURN(ops::HostPackedWeights host, ops::pack_weights(values, shape, format, packed_group(options)));
  values = {};  // free the floats before the upload allocates its staging copy
  return ops::upload_packed(ctx, host, name);
}

Result<detail::LinearWeight> upload_linear(Context& ctx, const Weights& weights, const std::string& name,
                                           std::vector<int64_t> shape, DType dtype, const ModelOptions& options) {
  detail::LinearWeight w;
  if (!packs_weights(options, dtype)) {
    RILL_ASSIGN_OR_RETURN(w.dense, upload_weight(ctx, weights, name, std::move(shape), dtype));
    return w;
  }
  RILL_ASSIGN_OR_RETURN(std::vector<float> values, weights.floats(name));
  RILL_ASSIGN_OR_RETURN(w.packed, upload_packed(ctx, std::move(values), name, shape, options));
  return w;
}

// The logits' columns between the starts of two head blocks: each block's logits are a view of
// the logits row, which starts 256-byte aligned (Tensor::rows).
int64_t logit_alignment(DType dt) { return int64_t(Tensor::kViewAlignment / dtype_size(dt)); }

// A [D, V] matrix packed in column blocks that each fit one storage binding (one where it fits).
Result<ops::PackedColumnBlocks> upload_packed_blocks(Context& ctx, std::vector<float> values, const std::string& name,
                                                     int64_t D, int64_t V, const ModelOptions& options, DType dt) {
  const ops::WeightFormat format = packed_format(options);
  RILL_ASSIGN_OR_RETURN(ops::HostPackedWeights host, ops::pack_weights(values, {D, V}, format, packed_group(options)));
  values = {};
  return ops::upload_packed_columns(ctx, host, name, 0, logit_alignment(dt));
}

// The embedding packed as its transpose [D, V] (ops::embedding_forward's packed form), which is also
// the tied head's B, in column blocks where it exceeds one binding: a 2,048-wide model's
// 64,000-token table in f16 is 262 MB, more than many devices bind at once.
Result<ops::PackedColumnBlocks> upload_embedding_packed(Context& ctx, const Weights& weights, int64_t V, int64_t D,
                                                        const ModelOptions& options, DType dt) {
  RILL_ASSIGN_OR_RETURN(std::vector<float> table, weights.floats("embed"));
  std::vector<float> transposed(table.size());
  for (int64_t v = 0; v < V; ++v)
    for (int64_t d = 0; d < D; ++d) transposed[size_t(d * V + v)] = table[size_t(v * D + d)];
  table = {};
  return upload_packed_blocks(ctx, std::move(transposed), "embed", D, V, options, dt);
}

// Another handle on the same packed words and scales (tensors are views, not copies).
Result<ops::PackedWeights> packed_view(const ops::PackedWeights& p) {
  ops::PackedWeights v{.format = p.format, .batch = p.batch, .rows = p.rows, .cols = p.cols, .group = p.group};
  RILL_ASSIGN_OR_RETURN(v.words, p.words.reshaped(p.words.shape()));
  if (p.scales.valid()) {
    RILL_ASSIGN_OR_RETURN(v.scales, p.scales.reshaped(p.scales.shape()));
  }
  return v;
}

// The output head in blocks of the vocabulary that each fit one storage binding, so that a big
// vocabulary (the 385M model's 64,000 x 1,024 in f32: 250 MiB) runs on devices that bind 128 MiB at
// once (lavapipe, phones). Packed: the tied embed_t's column blocks, or the head's own. Dense: the
// tied embedding's row blocks (views), or the head's column blocks (each uploaded as its own
// [D, columns] tensor). One block, the whole matrix, where it fits.
Status make_head_blocks(Context& ctx, const Weights& weights, const ModelConfig& config, const ModelOptions& options,
                        DType dt, detail::ModelTensors& w) {
  const char* op = "lm model";
  const int64_t V = config.vocab, D = config.width;
  const uint64_t limit = ctx.device().caps.max_storage_buffer_range, esize = dtype_size(dt);
  const int64_t logit_align = logit_alignment(dt);
  if (packs_weights(options, dt) && config.tie_embeddings) {
    for (size_t i = 0; i < w.embed_t.blocks.size(); ++i) {
      RILL_ASSIGN_OR_RETURN(ops::PackedWeights view, packed_view(w.embed_t.blocks[i]));
      w.head_blocks.push_back({.first = w.embed_t.first[i], .count = view.cols, .packed = std::move(view)});
    }
    return Status::ok();
  }
  if (packs_weights(options, dt)) {
    RILL_ASSIGN_OR_RETURN(std::vector<float> values, weights.floats("head"));
    RILL_ASSIGN_OR_RETURN(ops::PackedColumnBlocks head,
                          upload_packed_blocks(ctx, std::move(values), "head", D, V, options, dt));
    for (size_t i = 0; i < head.blocks.size(); ++i)
      w.head_blocks.push_back(
          {.first = head.first[i], .count = head.blocks[i].cols, .packed = std::move(head.blocks[i]), .owns = true});
    return Status::ok();
  }
  if (config.tie_embeddings) {
    RILL_ASSIGN_OR_RETURN(std::vector<ops::detail::RowBlock> rows,
                          ops::detail::binding_row_blocks(w.embed, limit, op, uint64_t(logit_align)));
    for (const ops::detail::RowBlock& r : rows) {
      RILL_ASSIGN_OR_RETURN(Tensor view, w.embed.rows(r.first, r.count));
      w.head_blocks.push_back({.first = r.first, .count = r.count, .weight = std::move(view), .transposed = true});
    }
    return Status::ok();
  }
  if (limit == 0 || uint64_t(D) * uint64_t(V) * esize <= limit) {
    RILL_ASSIGN_OR_RETURN(Tensor head, upload_weight(ctx, weights, "head", {D, V}, dt));
    w.head_blocks.push_back({.first = 0, .count = V, .weight = std::move(head), .owns = true});
    return Status::ok();
  }
  const int64_t per = int64_t(limit / (uint64_t(D) * esize)) / logit_align * logit_align;
  if (per == 0)
    return out_of_range(std::string(op) + ": " + std::to_string(logit_align) + " columns of the head [" +
                        std::to_string(D) + ", " + std::to_string(V) + "] take more than " + ctx.device().name +
                        " binds at once (" + std::to_string(limit) + " bytes)");
  RILL_ASSIGN_OR_RETURN(std::vector<float> head, weights.floats("head"));
  RILL_RETURN_IF_ERROR(check_f16_range("head", head, dt));  // as upload_weight checks a whole head
  for (int64_t first = 0; first < V; first += per) {
    const int64_t count = std::min(per, V - first);
    std::vector<float> columns(size_t(D * count));
    for (int64_t d = 0; d < D; ++d) std::copy_n(head.begin() + d * V + first, count, columns.begin() + d * count);
    const std::string name = "head[" + std::to_string(first) + ":" + std::to_string(first + count) + "]";
    RILL_ASSIGN_OR_RETURN(Tensor t, ctx.tensor(dt, {D, count}, name, MemoryPool::kWeights));
    RILL_RETURN_IF_ERROR(ctx.upload_floats(t, columns));
    w.head_blocks.push_back({.first = first, .count = count, .weight = std::move(t), .owns = true});
  }
  return Status::ok();
}

// Every tensor a kernel binds whole must fit one storage binding. The dense embedding is split at
// each gather (embedding_forward) and not checked here; the packed embedding's blocks and the head
// blocks are made to fit and checked as a safeguard. A clear error at creation, where a dispatch
// would fail at the first prompt.
Status check_bindings(const Context& ctx, const detail::ModelTensors& w) {
  const uint64_t limit = ctx.device().caps.max_storage_buffer_range;
  auto check = [&](const Tensor& t) -> Status {
    if (limit == 0 || t.size_bytes() <= limit) return Status::ok();
    return out_of_range("lm model: " + t.describe() + " is " + std::to_string(t.size_bytes()) + " bytes, more than " +
                        ctx.device().name + " binds at once (" + std::to_string(limit) +
                        "); int8 or int4 weights (ModelOptions::weights) take a quarter or a sixth of f32's");
  };
  auto check_weight = [&](const Tensor& dense, const ops::PackedWeights& packed) -> Status {
    for (const Tensor* t : {&dense, &packed.words, &packed.scales}) RILL_RETURN_IF_ERROR(check(*t));
    return Status::ok();
  };
  auto check_linear = [&](const detail::LinearWeight& l) { return check_weight(l.dense, l.packed); };
  for (const ops::PackedWeights& b : w.embed_t.blocks) RILL_RETURN_IF_ERROR(check_weight(Tensor(), b));
  for (const detail::HeadBlock& b : w.head_blocks) RILL_RETURN_IF_ERROR(check_weight(b.weight, b.packed));
  for (const detail::LayerTensors& l : w.layers)
    for (const detail::LinearWeight* t : {&l.wq, &l.wk, &l.wv, &l.wgate, &l.wo, &l.wu, &l.wg, &l.wd})
      RILL_RETURN_IF_ERROR(check_linear(*t));
  return Status::ok();
}

}  // namespace

namespace detail {

Result<Tensor> logits_of(const Tensor& logits, const HeadBlock& block) {
  if (block.first == 0 && uint64_t(block.count) == logits.element_count()) return logits.reshaped(logits.shape());
  RILL_ASSIGN_OR_RETURN(Tensor flat, logits.reshaped({int64_t(logits.element_count())}));
  RILL_ASSIGN_OR_RETURN(Tensor part, flat.rows(block.first, block.count));
  return part.reshaped({1, block.count});
}

}  // namespace detail

const char* weight_storage_name(WeightStorage storage) {
  switch (storage) {
    case WeightStorage::kPrecision:
      return "precision";
    case WeightStorage::kF16:
      return "f16";
    case WeightStorage::kInt8:
      return "int8";
    case WeightStorage::kInt4:
      return "int4";
  }
  return "unknown";
}

Result<WeightStorage> weight_storage_from_name(std::string_view name) {
  for (WeightStorage s : {WeightStorage::kPrecision, WeightStorage::kF16, WeightStorage::kInt8, WeightStorage::kInt4})
    if (name == weight_storage_name(s)) return s;
  return invalid_argument("lm: unknown weight storage '" + std::string(name) + "' (precision, f16, int8 or int4)");
}

Result<Model> Model::create(Context& ctx, const Weights& weights, const ModelOptions& options) {
  return rill::detail::host_memory_guarded("lm model", [&]() -> Result<Model> {
    // The host copies a big model's load makes (a transposed embedding, a head's column blocks, int4
    // packing) can exceed the host's memory: a clear error, not an exception out of a Result API.
    auto build = [&]() -> Result<Model> {
      ModelConfig config = weights.config();
      RILL_RETURN_IF_ERROR(config.validate());
      if (options.softmax_capacity == 0) return invalid_argument("lm model: softmax_capacity must be at least 1");
      if (options.weights != WeightStorage::kPrecision && options.weights != WeightStorage::kF16 &&
          options.weights != WeightStorage::kInt8 && options.weights != WeightStorage::kInt4)
        return invalid_argument("lm model: unknown weight storage " + std::to_string(int(options.weights)));
      if (options.weights == WeightStorage::kInt8 && options.int8_group == 0)
        return invalid_argument("lm model: int8_group must be at least 1");
      if (options.weights == WeightStorage::kInt4 && options.int4_group == 0)
        return invalid_argument("lm model: int4_group must be at least 1");
      auto impl = std::make_shared<Impl>(rill::detail::Access::share(ctx));
      impl->config = config;
      impl->options = options;
      // f16 activations need 16-bit storage buffers; without them (a minimal Vulkan 1.1 device, or a
      // driver whose compiler fails on them: vk/quirks.cpp) the model runs in f32, which only costs
      // memory, and says so. options() reports the precision in effect.
      if (options.precision == Precision::kF16 && !ctx.device().caps.storage_buffer_16bit) {
        log_message(MessageSeverity::kWarning, "lm model: f16 precision needs 16-bit storage, which " +
                                                   ctx.device().name + " cannot use; running in f32");
        impl->options.precision = Precision::kF32;
      }
      impl->dtype = impl->options.precision == Precision::kF16 ? DType::kF16 : DType::kF32;
      if (impl->options.prefill_segment == 0)
        impl->options.prefill_segment = ops::plan::lm_prefill_segment(ops::plan::traits_of(ctx));
      // Segments start on DiagAttention block boundaries: round the length down to whole blocks.
      const bool has_diag = std::count(config.layer_kinds.begin(), config.layer_kinds.end(), LayerKind::kDiag) > 0;
      // A DiagAttention block is one workgroup of block attention: refused here, not at the first prompt.
      const uint32_t max_block =
          std::min(ctx.device().caps.max_workgroup_size[0], ctx.device().caps.max_workgroup_invocations);
      if (has_diag && config.block > max_block)
        return invalid_argument("lm model: block " + std::to_string(config.block) + " is more than " +
                                ctx.device().name + " runs in one workgroup (" + std::to_string(max_block) +
                                "); a DiagAttention block is one workgroup");
      const uint32_t segment = impl->options.prefill_segment;
      impl->segment = has_diag ? std::max(config.block, segment / config.block * config.block) : segment;
      if (impl->segment > 65535) return invalid_argument("lm model: prefill_segment above 65535");
      impl->options.prefill_segment = impl->segment;  // options() reports what is in effect

      if (std::count(config.layer_kinds.begin(), config.layer_kinds.end(), LayerKind::kSoftmax) > 0) {
        // A softmax layer's cache is one tensor per layer: it must fit one storage-buffer binding.
        const uint64_t cache_bytes = uint64_t(config.heads) * options.softmax_capacity * config.head_dim() *
                                     (impl->dtype == DType::kF16 ? 2 : 4);
        const uint64_t limit = ctx.device().caps.max_storage_buffer_range;
        if (limit > 0 && cache_bytes > limit)
          return out_of_range("lm model: a softmax layer's key cache for " + std::to_string(options.softmax_capacity) +
                              " positions takes " + std::to_string(cache_bytes) + " bytes, more than " +
                              ctx.device().name + " binds at once (" + std::to_string(limit) + ")");
      }
      const int64_t V = config.vocab, D = config.width, H = config.heads, Dh = config.head_dim(), F = config.ffn_width;
      const DType dt = impl->dtype;
      auto& w = impl->tensors;
      const bool gains = config.norm == NormKind::kRmsNorm;
      auto load = [&](Tensor& t, const std::string& name, std::vector<int64_t> shape) -> Status {
        RILL_ASSIGN_OR_RETURN(t, upload_weight(ctx, weights, name, std::move(shape), dt));
        return Status::ok();
      };
      auto load_linear = [&](detail::LinearWeight& t, const std::string& name, std::vector<int64_t> shape) -> Status {
        RILL_ASSIGN_OR_RETURN(t, upload_linear(ctx, weights, name, std::move(shape), dt, options));
        return Status::ok();
      };
      if (packs_weights(options, dt)) {
        RILL_ASSIGN_OR_RETURN(w.embed_t, upload_embedding_packed(ctx, weights, V, D, options, dt));
      } else {
        RILL_RETURN_IF_ERROR(load(w.embed, "embed", {V, D}));
      }
      for (uint32_t i = 0; i < config.layers; ++i) {
        const std::string p = "layers." + std::to_string(i) + ".";
        detail::LayerTensors l;
        l.kind = config.layer_kinds[i];
        if (gains) RILL_RETURN_IF_ERROR(load(l.attn_norm, p + "attn_norm", {D}));
        RILL_RETURN_IF_ERROR(load_linear(l.wq, p + "wq", {H, D, Dh}));
        RILL_RETURN_IF_ERROR(load_linear(l.wk, p + "wk", {H, D, Dh}));
        RILL_RETURN_IF_ERROR(load_linear(l.wv, p + "wv", {H, D, Dh}));
        if (gains && l.kind == LayerKind::kNorm) {
          RILL_RETURN_IF_ERROR(load(l.out_norm, p + "out_norm", {D}));
          if (dt == DType::kF16) {  // the gain as the f16 tensor holds it (the fused step reads that one)
            RILL_ASSIGN_OR_RETURN(std::vector<float> gain, weights.floats(p + "out_norm"));
            for (float& x : gain) x = half_to_float(float_to_half(x));
            RILL_ASSIGN_OR_RETURN(l.out_norm_f32,
                                  ctx.tensor(DType::kF32, {D}, p + "out_norm_f32", MemoryPool::kWeights));
            RILL_RETURN_IF_ERROR(ctx.upload_floats(l.out_norm_f32, gain));
          }
        }
        if (config.output_gate) RILL_RETURN_IF_ERROR(load_linear(l.wgate, p + "wgate", {D, D}));
        RILL_RETURN_IF_ERROR(load_linear(l.wo, p + "wo", {D, D}));
        if (gains) RILL_RETURN_IF_ERROR(load(l.ffn_norm, p + "ffn_norm", {D}));
        RILL_RETURN_IF_ERROR(load_linear(l.wu, p + "wu", {D, F}));
        RILL_RETURN_IF_ERROR(load_linear(l.wg, p + "wg", {D, F}));
        RILL_RETURN_IF_ERROR(load_linear(l.wd, p + "wd", {F, D}));
        if (const auto decay = config.layer_decay(i); !decay.empty()) {
          RILL_ASSIGN_OR_RETURN(l.decay, ctx.tensor(DType::kF32, {H}, p + "decay", MemoryPool::kWeights));
          RILL_RETURN_IF_ERROR(ctx.upload_floats(l.decay, std::vector<float>(decay.begin(), decay.end())));
        }
        if (config.has_lrpe(i)) {
          // The rotations of the positions inside a segment; each call adds its start position's.
          RILL_ASSIGN_OR_RETURN(l.lrpe_theta, weights.floats(p + "lrpe_theta"));
          const uint32_t coarse_rows = (impl->segment + 63) / 64;
          RILL_ASSIGN_OR_RETURN(l.lrpe_coarse, ctx.tensor(DType::kF32, {coarse_rows, H * Dh, 2}, p + "lrpe_coarse",
                                                          MemoryPool::kWeights));
          RILL_ASSIGN_OR_RETURN(l.lrpe_fine,
                                ctx.tensor(DType::kF32, {64, H * Dh, 2}, p + "lrpe_fine", MemoryPool::kWeights));
          RILL_RETURN_IF_ERROR(
              ctx.upload_floats(l.lrpe_coarse, detail::lrpe_rotations(l.lrpe_theta, 0, 64, coarse_rows)));
          RILL_RETURN_IF_ERROR(ctx.upload_floats(l.lrpe_fine, detail::lrpe_rotations(l.lrpe_theta, 0, 1, 64)));
        }
        w.layers.push_back(std::move(l));
      }
      if (gains) RILL_RETURN_IF_ERROR(load(w.final_norm, "final_norm", {D}));
      RILL_RETURN_IF_ERROR(make_head_blocks(ctx, weights, config, options, dt, w));
      RILL_RETURN_IF_ERROR(check_bindings(ctx, w));
      uint64_t bytes = w.embed.size_bytes() + w.embed_t.size_bytes() + w.final_norm.size_bytes();
      for (const detail::HeadBlock& b : w.head_blocks)
        if (b.owns) bytes += b.weight.size_bytes() + b.packed.size_bytes();
      for (const auto& l : w.layers) {
        for (const Tensor* t :
             {&l.attn_norm, &l.out_norm, &l.out_norm_f32, &l.ffn_norm, &l.decay, &l.lrpe_coarse, &l.lrpe_fine})
          bytes += t->size_bytes();
        for (const detail::LinearWeight* t : {&l.wq, &l.wk, &l.wv, &l.wgate, &l.wo, &l.wu, &l.wg, &l.wd})
          bytes += t->size_bytes();
      }
      impl->weight_bytes = bytes;
      // After the uploads, which have read every page of a mapped file: the samples cost no disk reads.
      RILL_ASSIGN_OR_RETURN(impl->weights_fingerprint, detail::weights_fingerprint(weights));
      // Packed weights compute other values than the file's: a state made with them continues only them
      // (the plain tag stays that of the weights as stored, which earlier states carry).
      if (packs_weights(impl->options, impl->dtype)) {
        const ops::WeightFormat format = packed_format(impl->options);
        impl->weights_fingerprint += std::string("+") + ops::weight_format_name(format);
        if (format != ops::WeightFormat::kF16)
          impl->weights_fingerprint += "/" + std::to_string(packed_group(impl->options));
      }
      return Model(std::move(impl));
    };
    try {
      return build();
    } catch (const std::bad_alloc&) {
      return resource_exhausted("lm model: out of host memory while loading the weights");
    }
  });
}

Model::Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const ModelConfig& Model::config() const { return impl_->config; }
const ModelOptions& Model::options() const { return impl_->options; }
uint64_t Model::weight_bytes() const { return impl_->weight_bytes; }

}  // namespace rill::lm
