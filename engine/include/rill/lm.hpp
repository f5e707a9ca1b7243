// Long-sequence inference with TransNormer language models (arXiv 2210.10340): O(N) prefill in
// bounded segments and a constant cost and memory per decoded token.
//
//   auto ctx = rill::Context::create().value();
//   auto weights = rill::lm::Weights::load("model.json", "model.safetensors").value();
//   auto model = rill::lm::Model::create(ctx, weights).value();
//   auto session = model.session().value();
//   auto logits = session.prefill(prompt_bytes).value();      // last position's logits
//   rill::lm::Sampler sampler({.temperature = 0.8f, .top_p = 0.95f, .seed = 7});
//   uint32_t token = sampler.sample(logits, session.position());
//   logits = session.decode(token).value();                   // same cost at token 1 and 1M
//
// The model (engine/ref/transnormer.hpp is its executable specification), width D, H heads of
// Dh = D / H, pre-norm residual layers:
//   x = embed[token]
//   per layer: x = x + Wo . Mixer(Norm(x))          (token mixer)
//              x = x + Wd . (Norm(x) Wu * act(Norm(x) Wg))   (GLU channel mixer)
//   logits = Norm(x) Head                           (Head = embed^T when tied)
// Mixer per kind, per head h, on u = Norm(x):
//   Softmax (baseline): as DiagAttention with one block holding every position.
//   DiagAttention: q, k, v = u Wq_h, u Wk_h, u Wv_h; softmax(q k^T / sqrt(Dh)) v, causal, inside
//                  aligned blocks of `block` positions (position p sees [p - p % block, p]).
//   NormAttention: q, k = phi(u Wq_h), phi(u Wk_h), v = u Wv_h; o_t = sum_{s<=t} lambda_h^(t-s)
//                  (q_t . k_s) v_s (no denominator); heads concatenated, then a norm over D.
//                  lambda may differ per layer (TransNormerLLM's schedule: transnormerllm_decay).
//                  With LRPE (lrpe_layers), q and k become [phi(q) cos(theta p), phi(q) sin(theta p)]
//                  at absolute position p with theta = "layers.i.lrpe_theta" [H, Dh] (2 Dh features,
//                  so q_t . k_s sums phi(q) phi(k) cos(theta (t - s)): a relative position signal).
// Optional, for TransNormerLLM (arXiv 2307.14995): x = embed[token] * embed_scale, and an output
// gate o = (u Wgate) * o on the token mixer's output before Wo.
// Norm is RMSNorm with a gain, or SRMSNorm (no gain). Matrices multiply from the right (y = x W,
// W stored [in, out]); per-head projections are stored [H, D, Dh]. engine/ref/transnormer.cpp
// cites the published TransNormerLLM code for each of these forms.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/context.hpp"
#include "rill/export.hpp"
#include "rill/ops/elementwise.hpp"
#include "rill/ops/linear_attention.hpp"
#include "rill/safetensors.hpp"
#include "rill/status.hpp"

namespace rill::lm {

// kSoftmax: full causal softmax attention with a key/value cache that grows with the position
// (the baseline that shows what linear attention saves; not part of TransNormer).
enum class LayerKind { kDiag, kNorm, kSoftmax };
enum class NormKind { kRmsNorm, kSimpleRmsNorm };

struct RILL_API ModelConfig {
  uint32_t vocab = 256;  // byte-level by default: no tokenizer needed
  uint32_t width = 256;  // D
  uint32_t heads = 8;    // H; D % H == 0
  uint32_t ffn_width = 512;  // GLU hidden width F
  // One entry per layer. Empty in JSON means `layers` layers, the first half DiagAttention and
  // the rest NormAttention; validate() fills it in.
  std::vector<LayerKind> layer_kinds;
  uint32_t layers = 6;
  uint32_t block = 64;  // DiagAttention block size (1..256)
  uint32_t chunk = 64;  // NormAttention chunk length (1..64)
  ops::FeatureMap feature_map = ops::FeatureMap::kElu1;  // NormAttention q and k
  // NormAttention decay: one value per head in (0, 1] for every layer, or per layer and head
  // ([layers * H], layer-major), or empty: no decay.
  std::vector<float> decay;
  NormKind norm = NormKind::kRmsNorm;
  float norm_eps = 1e-6f;
  ops::GluActivation glu_activation = ops::GluActivation::kSilu;
  bool tie_embeddings = false;  // Head = embed^T
  float embed_scale = 1.0f;     // x = embed[token] * embed_scale
  bool output_gate = false;     // token mixer output (u Wgate) * o before Wo
  std::vector<uint32_t> lrpe_layers;  // NormAttention layers with LRPE on q and k

  uint32_t head_dim() const { return heads == 0 ? 0 : width / heads; }
  // The decay of a layer's heads ([H]), or empty (no decay). Needs a valid config.
  std::span<const float> layer_decay(uint32_t layer) const {
    if (decay.size() != uint64_t(layers) * heads || decay.size() == heads) return decay;
    return std::span<const float>(decay).subspan(size_t(layer) * heads, heads);
  }
  bool has_lrpe(uint32_t layer) const {
    for (uint32_t l : lrpe_layers)
      if (l == layer) return true;
    return false;
  }
  // Checks every field (clear message naming it) and fills layer_kinds when empty.
  Status validate();
};

// TransNormerLLM's decay (its published modeling_transnormer.py): ALiBi's head slopes s_h
// (2^(-8(h+1)/H) for H a power of two, interleaved otherwise), scaled per layer l by
// 1 - l / (layers - 1) + 1e-5, lambda = exp(-s): [layers * H], layer-major. layers >= 2.
RILL_API Result<std::vector<float>> transnormerllm_decay(uint32_t heads, uint32_t layers);

// JSON: {"vocab": 256, "width": 256, "heads": 8, "ffn_width": 512, "layers": 6,
//        "layer_kinds": ["diag", "diag", "diag", "norm", "norm", "norm"] ("softmax": the baseline), "block": 64, "chunk": 64,
//        "feature_map": "elu1" | "identity" | "relu", "decay": [..] | [], "norm": "rmsnorm" | "srmsnorm",
//        "norm_eps": 1e-6, "glu_activation": "silu" | "sigmoid" | "identity", "tie_embeddings": false,
//        "embed_scale": 1.0, "output_gate": false, "lrpe_layers": [0]}
// "decay" may also be per layer ([[..H values..] x layers]) or "transnormerllm" (that schedule).
// The TransNormerLLM keys are written only when they differ from the defaults.
// Missing keys take the defaults above; unknown keys, wrong types and invalid values are
// InvalidArgument naming the key. The result is validated.
RILL_API Result<ModelConfig> config_from_json(std::string_view json);
RILL_API std::string config_to_json(const ModelConfig& config);
RILL_API Result<ModelConfig> load_config(const std::string& path);

// Names and shapes of the weights of a config, in file order:
//   "embed" [vocab, D]
//   per layer i: "layers.i.attn_norm" [D] (RMSNorm only), "layers.i.wq", "layers.i.wk",
//     "layers.i.wv" [H, D, Dh], "layers.i.out_norm" [D] (NormAttention with RMSNorm only),
//     "layers.i.wo" [D, D], "layers.i.ffn_norm" [D] (RMSNorm only), "layers.i.wu", "layers.i.wg" [D, F],
//     "layers.i.wd" [F, D], "layers.i.wgate" [D, D] (output_gate), "layers.i.lrpe_theta" [H, Dh]
//     (LRPE layers)
//   "final_norm" [D] (RMSNorm only), "head" [D, vocab] (not when tied)
struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
};
RILL_API std::vector<WeightSpec> weight_specs(const ModelConfig& config);

// Storage type the model runs in: f32, or f16 storage with f32 arithmetic (half the memory). In
// f16, NormAttention outputs (sums over every earlier position) stay f32 until their norm; other
// activations past f16's range stop a call with OutOfRange.
enum class Precision { kF32, kF16 };

// How the linear layers' weights are kept on the device (the norms and angles keep the precision;
// the embedding is packed too): as the precision says, or packed f16, int8 or int4 with group
// scales whatever the file holds (rill/ops/packed_weights.hpp; converted at load, arithmetic stays
// f32). Int8 takes about a quarter of the f32 bytes, int4 about a sixth: the edge-memory forms.
enum class WeightStorage { kPrecision, kF16, kInt8, kInt4 };
RILL_API const char* weight_storage_name(WeightStorage storage);  // "precision", "f16", "int8", "int4"
RILL_API Result<WeightStorage> weight_storage_from_name(std::string_view name);

// A config and its weights on the host. Weights from a file stay in the (mapped) file until the
// model uploads them: no copy is made for f32 or f16 data that matches the model's precision.
class RILL_API Weights {
 public:
  // config_path: the JSON config; weights_path: safetensors with exactly the tensors of
  // weight_specs(config), each F32, F16 or BF16 (mixed is allowed). The file is untrusted: every
  // problem is a Status naming the file and the tensor (missing, unexpected, wrong shape or dtype).
  static Result<Weights> load(const std::string& config_path, const std::string& weights_path);
  static Result<Weights> from_file(ModelConfig config, SafetensorsFile file);
  // Seeded random initialisation (the same seed gives the same weights on every platform):
  // matrices ~ N(0, 1/fan_in) (embed ~ N(0, 1)), gains 1.
  static Result<Weights> random(ModelConfig config, uint64_t seed);

  Weights(Weights&&) noexcept;
  Weights& operator=(Weights&&) noexcept;
  ~Weights();

  const ModelConfig& config() const;
  // The weight `name` as floats (converted from the stored dtype).
  Result<std::vector<float>> floats(std::string_view name) const;
  // The stored dtype of `name` (F32 for random weights).
  Result<TensorDType> dtype(std::string_view name) const;
  // Raw bytes of `name` in its stored dtype (a view into the mapped file, or into memory).
  Result<std::span<const uint8_t>> bytes(std::string_view name) const;
  // Writes the config JSON and the weights (converted to `dtype`: F32, F16 or BF16), both
  // atomically. LRPE angles stored in f32 stay f32 (16 bits would move far positions' angles).
  // Refused before writing: two paths that name one file, or a config past load_config's 1 MiB.
  Status save(const std::string& config_path, const std::string& weights_path,
              TensorDType dtype = TensorDType::kF32) const;

 private:
  struct Impl;
  explicit Weights(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Seeded sampling from logits on the host. temperature 0 (or top_k 1) is greedy. top_k 0 and
// top_p 1 disable those filters. The draw for a step depends only on (seed, step), so a restored
// session samples exactly what the paused one would have.
struct SamplerOptions {
  float temperature = 1.0f;
  uint32_t top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
};
class RILL_API Sampler {
 public:
  explicit Sampler(SamplerOptions options = {});
  static Status validate(const SamplerOptions& options);
  // A token in [0, logits.size()); NaN entries are never chosen (0 when logits is empty or every
  // entry is NaN, as last_logits() is empty at position 0: check first where that can happen, as
  // the C API's rill_lm_sample does).
  uint32_t sample(std::span<const float> logits, uint64_t step) const;
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
};

struct ModelOptions {
  // kF16 needs 16-bit storage buffers: where the device cannot use them the model runs in f32 with
  // a warning in rill's log, and Model::options() says kF32.
  Precision precision = Precision::kF32;
  WeightStorage weights = WeightStorage::kPrecision;
  uint32_t int8_group = 64;  // rows of a weight matrix (its input dimension) per int8 scale
  uint32_t int4_group = 32;  // the same per int4 scale (4 bits need finer groups than 8)
  // Prefill runs the prompt in segments of this many positions (at most 65535, else InvalidArgument;
  // with kDiag layers rounded down to whole blocks, one block at least): device memory stays
  // bounded whatever the prompt length. 0: the device's choice (2048 on CPU
  // drivers and on integrated and mobile GPUs, whose segments come out of the system's memory;
  // 8192 on GPUs with memory of their own, whose matmuls need the longer segments);
  // Model::options() reports it.
  uint32_t prefill_segment = 0;
  // Positions a session of a model with kSoftmax layers can hold (their key/value caches are
  // allocated at this size up front); past it prefill and decode return OutOfRange.
  uint32_t softmax_capacity = 4096;
};

class Session;

// The weights on the device and the kernels that run them. Sessions share a model; the model shares
// `ctx` (as tensors do), so the Context may be moved or destroyed first.
class RILL_API Model {
 public:
  static Result<Model> create(Context& ctx, const Weights& weights, const ModelOptions& options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const ModelConfig& config() const;
  const ModelOptions& options() const;  // as in effect (see ModelOptions::precision)
  uint64_t weight_bytes() const;  // device bytes of the weights
  Result<Session> session();

  struct Impl;  // internal

 private:
  explicit Model(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Progress of a long prefill: positions done so far and the total of this call.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Hooks of a long prefill, for an app's progress display and its cancel button. `progress` is
// called after each segment; `stop` before each segment (and each decoding step that reaches the
// first block boundary): returning true stops the prefill there with StatusCode::kCancelled. Both
// run on the calling thread; `stop` may read a flag that another thread sets. The positions done
// before the stop are kept (position() says how far it got), so prefilling the remaining tokens
// later gives the same logits, bit for bit, as one uninterrupted prefill. A stop takes effect
// within one segment (ModelOptions::prefill_segment positions: a shorter segment stops sooner).
// A hook must not use or destroy the Session whose prefill calls it (the C API refuses such calls,
// and defers a destroy until the call returns).
struct PrefillHooks {
  ProgressFn progress;
  std::function<bool()> stop;
};

// What Session::score returns: the model's log-probabilities of a text's tokens.
struct TokenScores {
  // log_probs[i]: the natural logarithm of the model's probability of tokens[i + 1] after everything
  // before it (the session's earlier positions and tokens[0..i]), f32; tokens.size() - 1 values.
  std::vector<float> log_probs;
  std::vector<float> logits;  // the last position's, as prefill returns them
};

// log softmax(logits)[token], in double: the probability the model gives `token` as the next one,
// from the logits prefill, decode or score returned (how to score a text's first token, which
// comes after those logits). InvalidArgument when token >= logits.size(), or when the logits hold a
// NaN or +inf or are all -inf (a -inf logit is a token ruled out: its log-probability is -inf).
RILL_API Result<double> log_prob(std::span<const float> logits, uint32_t token);

// One conversation: the recurrent state (per NormAttention layer and head a Dk x Dv matrix, per
// DiagAttention layer the keys and values of the current block) and the position.
class RILL_API Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Runs tokens (each < vocab) from the current position; returns the last position's logits.
  Result<std::vector<float>> prefill(std::span<const uint32_t> tokens, const ProgressFn& progress = {});
  // The same with a stop hook (PrefillHooks above): kCancelled when it stopped, the session then
  // holding the positions done.
  Result<std::vector<float>> prefill(std::span<const uint32_t> tokens, const PrefillHooks& hooks);
  // Runs tokens like prefill (the session then holds them, and hooks work the same) and returns
  // the model's log-probability of each token after the first (TokenScores), computed on the
  // device a chunk of rows at a time (no [tokens, vocab] logits exist at once): a text's
  // perplexity, or how likely each of several continuations is after a prompt (score each in its
  // own session, or restore the prompt's state before each). With the stop hook, the scores of a
  // stopped call are lost but the positions done are kept (and last_logits(), which scores the
  // first of the remaining tokens).
  Result<TokenScores> score(std::span<const uint32_t> tokens, const PrefillHooks& hooks = {});
  // One token at the current position; returns its logits.
  Result<std::vector<float>> decode(uint32_t token);
  // A new session at this one's position with a copy of its state, made on the device (no
  // download): a prompt prefilled once, then each of several continuations scored or generated in
  // a fork of its own. The two then go on independently; the fork's memory is its own
  // (state_bytes(), plus the activations of whatever it runs). A Sampler's draw depends only on its
  // seed and the position: forks sampled with one seed write the same tokens (give each its own).
  Result<Session> fork() const;
  uint64_t position() const;  // tokens consumed so far
  // The most positions the session can hold: softmax_capacity with a softmax layer, else 2^32 - 1.
  uint64_t max_positions() const;
  // The logits after the last token consumed (what prefill, score or decode last returned, also
  // when a stopped call kept positions): a stopped or restored session draws or scores its next
  // token from them. Saved with the state. Empty at position 0, and after restoring a state saved
  // by a rill before they were (a prompt is then needed to go on). Valid until the next call.
  std::span<const float> last_logits() const;
  Status reset();             // back to position 0, empty state
  // A call whose logits or scores come out non-finite (OutOfRange where f16 activations
  // overflowed, DataLoss else) leaves the state spent: each later prefill, score, decode, fork or
  // save returns FailedPrecondition with that first error, until reset() or a restore. So does a
  // reset that fails part way (some state zeroed, some not), and a prefill, score or decode that
  // fails after its work reached the device (a failed wait: the state may hold tokens that
  // position() does not count), and one that runs out of host memory (ResourceExhausted). One that
  // fails before it runs leaves the session as it was, less the segments or steps of a prefill
  // that completed (position() says how far it got).

  // The state as a safetensors file (config fingerprint, weights tag, precision, position, every
  // state tensor, the last logits and a checksum of the position and tensors); restore() accepts
  // only a state of a model with the same config, precision and weights, packed the same way
  // (ModelOptions::weights and its group), and refuses a damaged one (DataLoss). A file
  // it refuses leaves the session as it was; an upload that fails part way resets it to position 0.
  // A file, or bytes, larger than a state of this session can be are refused (OutOfRange) before
  // they are parsed.
  // The weights' tag hashes small tensors whole and 64 elements spread over each larger one (a
  // load stays quick): weights that differ in a few elements only (a few rows fine-tuned) may share it.
  Status save_state(const std::string& path) const;
  Status restore_state(const std::string& path);
  Result<std::vector<uint8_t>> serialize_state() const;
  Status deserialize_state(std::span<const uint8_t> bytes);
  uint64_t state_bytes() const;  // device bytes the state occupies (constant in the position)
  // The segment length this session prefills in: the model's (ModelOptions::prefill_segment), or
  // less where a segment of that length did not fit in device memory (or the context's budget):
  // such a prefill records its segment again at half the length, in whole blocks, with a warning,
  // rather than fail; ResourceExhausted only once a single block does not fit.
  uint32_t prefill_segment() const;
  // Device bytes the session holds now: its state, and the activations of the prefill segment and
  // of the decoding step recorded so far (each kept for the next call of its kind).
  uint64_t device_bytes() const;
  // Frees the prefill segment's activations until the next prefill records them again: a
  // segment's worth of every layer's rows, most of what a session holds past its state (for an
  // app that decodes for long after a long prompt on a device short of memory). The state, the
  // position and decoding are unchanged.
  void release_prefill_memory();
  // Dispatches one decoding step runs (0 before the first decode): 2 per layer plus the embedding
  // and the logits where the fused decoding kernels fit the device, about a dozen per layer else.
  uint32_t decode_dispatches() const;

 private:
  friend class Model;
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::lm
