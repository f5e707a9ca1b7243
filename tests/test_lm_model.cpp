// The TransNormer model on the device against the CPU reference (engine/ref/transnormer.hpp):
// prefill logits, decoding after a prefill at every position, segment boundaries, f16 weights,
// packed (int8, f16) linear weights,
// the softmax baseline, state save/restore, bounded memory and bad input (fused decoding:
// test_lm_decode_fused.cpp).
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_test.hpp"
#include "lm_test_models.hpp"
#include "op_test.hpp"
#include "rill/files.hpp"
#include "rill/half.hpp"
#include "rill/lm.hpp"
#include "rill/ops/packed_weights.hpp"
#include "transnormer.hpp"

using rill::lm::LayerKind;
using rill::lm::ModelConfig;
using rill_test::check_row;
using rill_test::edited_weights;
using rill_test::make_model;
using rill_test::reference;
using rill_test::tiny;
using rill_test::tokens_of;

namespace {

// Prefill `prompt` of the tokens, then decode the rest: every checked row within tol of ref.
void check_prefill_then_decode(rill::lm::Model& model, std::span<const uint32_t> tokens, size_t prompt,
                               const std::vector<float>& ref, double tol) {
  const size_t vocab = model.config().vocab;
  auto s = model.session().value();
  auto logits = s.prefill(tokens.first(prompt));
  INFO(logits.status().to_string());
  REQUIRE(logits.is_ok());
  check_row(*logits, ref, prompt - 1, vocab, tol, "prefill");
  for (size_t t = prompt; t < tokens.size(); ++t) {
    auto step = s.decode(tokens[t]);
    REQUIRE(step.is_ok());
    check_row(*step, ref, t, vocab, tol, "decode");
  }
}

}  // namespace

GPU_TEST_CASE("lm prefill equals the CPU reference over odd lengths and segment boundaries", "[lm][gpu]") {
  // Both kernel families: what CPU drivers run and what GPUs run (parallel chunked attention).
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm, LayerKind::kNorm}), 11).value();
    auto model = make_model(ctx, w, {.prefill_segment = 16});
    for (size_t n : {1, 7, 8, 17, 37}) {
      const auto tokens = tokens_of(n, w.config().vocab);
      const auto ref = reference(w, tokens);
      auto s = model.session().value();
      auto logits = s.prefill(tokens);
      INFO(logits.status().to_string());
      REQUIRE(logits.is_ok());
      check_row(*logits, ref, n - 1, w.config().vocab, 2e-4, "prefill n=" + std::to_string(n));
      CHECK(s.position() == n);
    }
  }
}

GPU_TEST_CASE("lm decoding after a prefill equals the full forward at every position", "[lm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    ModelConfig c = tiny({LayerKind::kDiag, LayerKind::kNorm});
    c.decay = {0.9f, 1.0f, 0.75f};
    c.feature_map = rill::ops::FeatureMap::kRelu;
    const auto w = rill::lm::Weights::random(c, 5).value();
    auto model = make_model(ctx, w, {.prefill_segment = 8});
    const size_t n = 29, prompt = 11;  // the prompt ends mid-block; decoding crosses block boundaries
    const auto tokens = tokens_of(n, c.vocab, 3);
    const auto ref = reference(w, tokens);
    auto s = model.session().value();
    auto logits = s.prefill(std::span(tokens).first(prompt));
    REQUIRE(logits.is_ok());
    check_row(*logits, ref, prompt - 1, c.vocab, 2e-4, "prefill");
    for (size_t t = prompt; t < n; ++t) {
      auto step = s.decode(tokens[t]);
      REQUIRE(step.is_ok());
      check_row(*step, ref, t, c.vocab, 2e-4, "decode");
    }
    // A second prefill continues from a position inside a block.
    auto s2 = model.session().value();
    REQUIRE(s2.prefill(std::span(tokens).first(5)).is_ok());
    auto rest = s2.prefill(std::span(tokens).subspan(5));
    REQUIRE(rest.is_ok());
    check_row(*rest, ref, n - 1, c.vocab, 2e-4, "prefill in two calls");
  }
}

GPU_TEST_CASE("lm variants: tied embeddings, SRMSNorm, identity feature map, sigmoid GLU", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  ModelConfig c = tiny({LayerKind::kNorm, LayerKind::kDiag, LayerKind::kNorm});
  c.tie_embeddings = true;
  c.norm = rill::lm::NormKind::kSimpleRmsNorm;
  c.feature_map = rill::ops::FeatureMap::kIdentity;
  c.glu_activation = rill::ops::GluActivation::kSigmoid;
  const auto w = rill::lm::Weights::random(c, 9).value();
  auto model = make_model(ctx, w, {.prefill_segment = 8});
  const auto tokens = tokens_of(21, c.vocab, 1);
  const auto ref = reference(w, tokens);
  auto s = model.session().value();
  auto logits = s.prefill(std::span(tokens).first(20));
  REQUIRE(logits.is_ok());
  check_row(*logits, ref, 19, c.vocab, 2e-4, "prefill");
  auto step = s.decode(tokens[20]);
  REQUIRE(step.is_ok());
  check_row(*step, ref, 20, c.vocab, 2e-4, "decode");
}

GPU_TEST_CASE("lm TransNormerLLM form: SiLU maps, per-layer decay, LRPE, output gate, scaled embedding", "[lm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    ModelConfig c = tiny({LayerKind::kNorm, LayerKind::kNorm, LayerKind::kNorm});
    c.decay = rill::lm::transnormerllm_decay(c.heads, c.layers).value();
    c.feature_map = rill::ops::FeatureMap::kSilu;
    c.lrpe_layers = {0, 2};
    c.output_gate = true;
    c.embed_scale = std::sqrt(float(c.width));
    c.norm = rill::lm::NormKind::kSimpleRmsNorm;
    c.glu_activation = rill::ops::GluActivation::kIdentity;
    c.tie_embeddings = true;
    REQUIRE(c.validate().is_ok());
    const auto w = rill::lm::Weights::random(c, 21).value();
    // Segments of 96 positions: LRPE's coarse table has two rows and each segment a new base.
    auto model = make_model(ctx, w, {.prefill_segment = 96});
    const size_t n = 230, prompt = 200;
    const auto tokens = tokens_of(n, c.vocab, 5);
    check_prefill_then_decode(model, tokens, prompt, reference(w, tokens), 2e-4);
  }
}

GPU_TEST_CASE("lm f16 precision stays within tolerance of the reference", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  // Without 16-bit storage the model falls back to f32 (test_limit_profiles.cpp): nothing f16 to test.
  if (rill_test::float_dtypes(ctx).back() != rill::DType::kF16) return;
  const auto w32 = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 3).value();
  // Round the weights to f16 through a saved file, so the reference sees what the device holds.
  const std::string cfg = rill_test::temp_path("lm-f16.json"), file = rill_test::temp_path("lm-f16.safetensors");
  REQUIRE(w32.save(cfg, file, rill::TensorDType::kF16).is_ok());
  const auto w16 = rill::lm::Weights::load(cfg, file).value();
  auto model = make_model(ctx, w16, {.precision = rill::lm::Precision::kF16, .prefill_segment = 8});
  const auto tokens = tokens_of(19, w16.config().vocab, 2);
  const auto ref = reference(w16, tokens);
  auto s = model.session().value();
  auto logits = s.prefill(std::span(tokens).first(18));
  REQUIRE(logits.is_ok());
  // f16 activations (11-bit significands) through two layers: declared tolerance 2e-2 of the scale.
  check_row(*logits, ref, 17, w16.config().vocab, 2e-2, "f16 prefill");
  auto step = s.decode(tokens[18]);
  REQUIRE(step.is_ok());
  check_row(*step, ref, 18, w16.config().vocab, 2e-2, "f16 decode");
}

// A NormAttention layer without decay sums over every position before it: with large q, k and v its
// output passes f16's 65504 within a few positions (the norm after it takes any scale). An f16 model
// keeps that output in f32 until the norm: prefill, scoring and decoding (fused and per op) stay
// finite and match the reference on the same f16 weights.
GPU_TEST_CASE("lm f16 NormAttention outputs past f16's range are kept in f32 until their norm", "[lm][gpu]") {
  if (rill_test::float_dtypes(rill_test::make_context()).back() != rill::DType::kF16) {
    WARN("the device stores no f16: the model falls back to f32");
    return;
  }
  const auto config = tiny({LayerKind::kNorm, LayerKind::kDiag});
  const auto big = edited_weights(rill::lm::Weights::random(config, 6).value(), "lm-f16-wide",
                                  [](const std::string& name, std::vector<float>& values) {
                                    const bool qkv =
                                        name.ends_with(".wq") || name.ends_with(".wk") || name.ends_with(".wv");
                                    for (float& x : values)  // q, k, v of about 30; as f16 holds them
                                      x = rill::half_to_float(rill::float_to_half(qkv ? x * 30.0f : x));
                                  });
  const auto tokens = tokens_of(40, config.vocab);
  rill::ref::TransNormerTrace trace;
  const auto ref = reference(big, tokens, &trace);
  REQUIRE(trace.largest_norm_attention_output > 65504.0);  // the premise: past f16's range
  const size_t vocab = config.vocab;
  // Both kernel families (the GPU one's norm, conversion and attention kernels run on any device).
  for (const auto& [family, decode] : {std::pair{"cpu", "fused"}, {"cpu", "per-op"}, {"gpu", "fused"}}) {
    INFO(family << " family, decoding " << decode);
    auto options = rill_test::validated_options();
    options.kernel_variant = family;
    options.kernel_plan = std::string("lm_decode=") + decode;
    auto ctx = rill_test::make_context(options);
    auto model = make_model(ctx, big, {.precision = rill::lm::Precision::kF16, .prefill_segment = 16});
    check_prefill_then_decode(model, tokens, 36, ref, 2e-2);
    auto scores = model.session().value().score(tokens);
    INFO(scores.status().to_string());
    REQUIRE(scores.is_ok());
    for (size_t t = 0; t + 1 < tokens.size(); ++t) {
      const std::span<const float> row(ref.data() + t * vocab, vocab);
      const double want = rill::lm::log_prob(row, tokens[t + 1]).value();
      INFO("position " << t);
      CHECK(std::fabs(scores->log_probs[t] - want) <= 2e-2 * (1.0 + std::fabs(want)));
    }
  }
}

// Activations past f16's range elsewhere (here the FFN's hidden values) are an error naming the
// cause, not non-finite logits (which sampled as token 0 for ever), in prefill, scoring and decoding.
GPU_TEST_CASE("lm f16 activations that overflow are an error naming the cause, not NaN logits", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  if (rill_test::float_dtypes(ctx).back() != rill::DType::kF16) {
    WARN("the device stores no f16: the model falls back to f32");
    return;
  }
  const auto config = tiny({LayerKind::kNorm});
  const auto big = edited_weights(rill::lm::Weights::random(config, 6).value(), "lm-f16-overflow",
                                  [](const std::string& name, std::vector<float>& values) {
                                    if (name.ends_with(".wu") || name.ends_with(".wg"))
                                      for (float& x : values) x *= 1000.0f;  // a * act(b) far past 65504
                                  });
  const auto tokens = tokens_of(40, config.vocab);
  auto f32 = make_model(ctx, big, {.precision = rill::lm::Precision::kF32});
  auto fine = f32.session().value().prefill(tokens);
  INFO(fine.status().to_string());
  REQUIRE(fine.is_ok());  // f32 holds them
  auto f16 = make_model(ctx, big, {.precision = rill::lm::Precision::kF16});
  for (const std::string op : {"prefill", "score", "decode"}) {
    auto s = f16.session().value();
    const rill::Status status = op == "prefill" ? s.prefill(tokens).status()
                                : op == "score" ? s.score(tokens).status()
                                                : s.decode(tokens[0]).status();
    INFO(op << ": " << status.to_string());
    CHECK(status.code() == rill::StatusCode::kOutOfRange);
    CHECK(status.message().find("f16 activations overflowed") != std::string::npos);
    // The state is spent: every later call says so and why, until a reset.
    for (const rill::Status& again : {s.decode(tokens[1]).status(), s.prefill(tokens).status(),
                                      s.score(tokens).status(), s.fork().status(), s.serialize_state().status()}) {
      INFO(again.to_string());
      CHECK(again.code() == rill::StatusCode::kFailedPrecondition);
      CHECK(again.message().find("spent (" + status.message()) != std::string::npos);
    }
    REQUIRE(s.reset().is_ok());
    CHECK(s.decode(tokens[0]).status().code() == rill::StatusCode::kOutOfRange);  // runs again
  }
}

// Hidden values whose squares overflow f32 in an RMSNorm (here embeddings of 1e20) are an error,
// not the zeros of 1/sqrt(inf): those gave uniform logits, a perplexity of the vocabulary's size.
GPU_TEST_CASE("lm hidden values past the norm's f32 range are an error, not uniform logits", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  auto options = rill_test::validated_options();
  options.kernel_plan = "lm_decode=per-op";
  auto per_op = rill_test::make_context(options);
  const auto config = tiny({LayerKind::kNorm, LayerKind::kDiag});
  const auto big = edited_weights(rill::lm::Weights::random(config, 8).value(), "lm-norm-overflow",
                                  [](const std::string& name, std::vector<float>& values) {
                                    if (name == "embed")
                                      for (float& x : values) x *= 1e20f;  // squares past FLT_MAX
                                  });
  const auto tokens = tokens_of(20, config.vocab);
  for (rill::Context* c : {&ctx, &per_op}) {
    auto model = make_model(*c, big, {.precision = rill::lm::Precision::kF32});
    for (const std::string op : {"prefill", "score", "decode"}) {
      auto s = model.session().value();
      const rill::Status status = op == "prefill" ? s.prefill(tokens).status()
                                  : op == "score" ? s.score(tokens).status()
                                                  : s.decode(tokens[0]).status();
      INFO(op << ": " << status.to_string());
      CHECK(status.code() == rill::StatusCode::kDataLoss);
      CHECK(status.message().find("not finite") != std::string::npos);
    }
  }
}

GPU_TEST_CASE("lm f16 precision refuses weights past f16's range instead of turning them to Inf", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  if (rill_test::float_dtypes(ctx).back() != rill::DType::kF16) return;  // f32 fallback: nothing converts
  const auto config = tiny({LayerKind::kDiag, LayerKind::kNorm});
  const auto big = edited_weights(rill::lm::Weights::random(config, 3).value(), "lm-f16-range",
                                  [](const std::string& name, std::vector<float>& values) {
                                    if (name == "embed") values[5] = 70000.0f;  // finite in f32, Inf in f16
                                  });
  const auto in_f16 = rill::lm::Model::create(ctx, big, {.precision = rill::lm::Precision::kF16});
  REQUIRE_FALSE(in_f16.is_ok());
  CHECK(in_f16.status().code() == rill::StatusCode::kOutOfRange);
  CHECK(in_f16.status().message().find("'embed'") != std::string::npos);
  CHECK(rill::lm::Model::create(ctx, big, {.precision = rill::lm::Precision::kF32}).is_ok());
  // An untied head uploaded in column blocks (it exceeds one binding) is checked as a whole one is
  // (its blocks were converted to f16 Inf, and every prompt then failed).
  auto options = rill_test::validated_options();
  options.limit_profile = "small-bindings";  // 64 KiB: a [32, 1500] f16 head takes two blocks
  auto small = rill_test::make_context(options);
  ModelConfig wide = tiny({LayerKind::kNorm, LayerKind::kDiag});
  wide.width = 32;
  wide.heads = 2;
  wide.ffn_width = 64;
  wide.vocab = 1500;
  wide.tie_embeddings = false;
  REQUIRE(wide.validate().is_ok());
  const auto big_head = edited_weights(rill::lm::Weights::random(wide, 4).value(), "lm-f16-range-head",
                                       [](const std::string& name, std::vector<float>& values) {
                                         if (name == "head") values[values.size() - 3] = -70000.0f;
                                       });
  const auto blocked = rill::lm::Model::create(small, big_head, {.precision = rill::lm::Precision::kF16});
  REQUIRE_FALSE(blocked.is_ok());
  CHECK(blocked.status().code() == rill::StatusCode::kOutOfRange);
  CHECK(blocked.status().message().find("'head'") != std::string::npos);
  CHECK(rill::lm::Model::create(small, big_head, {.precision = rill::lm::Precision::kF32}).is_ok());
}

namespace {

// The reference on the values packed weights keep: each linear layer's weight, and the embedding
// as its transpose [D, V], packed and unpacked on the host exactly as the device reads them.
std::vector<float> packed_reference(const rill::lm::Weights& w, std::span<const uint32_t> tokens,
                                    rill::ops::WeightFormat format, uint32_t group) {
  auto through_packing = [&](std::vector<float> v, const std::vector<int64_t>& shape) {
    const auto p = rill::ops::pack_weights(v, shape, format, group).value();
    size_t i = 0;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t c = 0; c < p.cols; ++c) v[i++] = p.value(b, r, c);
    return v;
  };
  auto floats = [&](const std::string& name) {
    std::vector<float> v = w.floats(name).value();
    const int64_t V = w.config().vocab, D = w.config().width;
    if (name == "embed") {
      std::vector<float> t(v.size());
      for (int64_t r = 0; r < V; ++r)
        for (int64_t d = 0; d < D; ++d) t[size_t(d * V + r)] = v[size_t(r * D + d)];
      t = through_packing(std::move(t), {D, V});
      for (int64_t r = 0; r < V; ++r)
        for (int64_t d = 0; d < D; ++d) v[size_t(r * D + d)] = t[size_t(d * V + r)];
      return v;
    }
    const std::string leaf = name.substr(name.rfind('.') + 1);
    if (leaf != "wq" && leaf != "wk" && leaf != "wv" && leaf != "wgate" && leaf != "wo" && leaf != "wu" &&
        leaf != "wg" && leaf != "wd" && leaf != "head")
      return v;
    for (const auto& spec : rill::lm::weight_specs(w.config()))
      if (spec.name == name) return through_packing(std::move(v), spec.shape);
    return v;
  };
  return rill::ref::transnormer_logits(w.config(), floats, tokens);
}

}  // namespace

GPU_TEST_CASE("lm with f16 or int8 or int4 linear weights equals the reference on the packed values", "[lm][gpu]") {
  using rill::lm::WeightStorage;
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (bool tied : {false, true}) {
      INFO(ctx.kernel_variant("util/saxpy").value() << (tied ? " tied" : " untied"));
      ModelConfig c = tiny({LayerKind::kDiag, LayerKind::kNorm, LayerKind::kNorm});
      c.output_gate = true;  // every linear weight: q, k, v, gate, o, the GLU's three and the head
      c.lrpe_layers = {2};
      c.embed_scale = 1.5f;
      c.tie_embeddings = tied;
      REQUIRE(c.validate().is_ok());
      const auto w = rill::lm::Weights::random(c, 8).value();
      const uint64_t f32_bytes = make_model(ctx, w).weight_bytes();
      uint64_t previous = f32_bytes;
      for (auto [storage, format] : {std::pair{WeightStorage::kF16, rill::ops::WeightFormat::kF16},
                                     std::pair{WeightStorage::kInt8, rill::ops::WeightFormat::kInt8},
                                     std::pair{WeightStorage::kInt4, rill::ops::WeightFormat::kInt4}}) {
        INFO(rill::lm::weight_storage_name(storage));
        auto model =
            make_model(ctx, w, {.weights = storage, .int8_group = 16, .int4_group = 16, .prefill_segment = 16});
        CHECK(model.weight_bytes() < previous);  // f32 > f16 > int8 > int4
        previous = model.weight_bytes();
        const size_t n = 41, prompt = 35;
        const auto tokens = tokens_of(n, c.vocab, 9);
        check_prefill_then_decode(model, tokens, prompt, packed_reference(w, tokens, format, 16), 2e-4);
      }
    }
  }
}

// A vocabulary whose embedding and head exceed one storage binding (the small-bindings profile's
// 64 KiB; the 385M model's 250 MiB table on a device that binds 128 MiB): the gather and the head
// run in blocks of the vocabulary, prefill and decoding (fused and per op) equal the reference,
// tied and untied, dense and packed (f16, int8: the table's column blocks).
GPU_TEST_CASE("lm models whose embedding and head exceed one binding run in blocks", "[lm][gpu][own-limits]") {
  auto options = rill_test::validated_options();
  options.limit_profile = "small-bindings";
  auto small = rill_test::make_context(options);
  options.kernel_plan = "lm_decode=per-op";
  auto small_per_op = rill_test::make_context(options);
  options.kernel_plan = "";
  options.kernel_variant = "gpu";  // the GPU kernels (fused decoding's GPU grid, the tiled matmul)
  auto small_gpu = rill_test::make_context(options);
  ModelConfig c = tiny({LayerKind::kNorm, LayerKind::kDiag});
  c.width = 32;
  c.heads = 2;
  c.ffn_width = 64;
  c.vocab = 1500;  // 192 KB in f32: three blocks of up to 512 rows (or columns)
  for (bool tied : {true, false}) {
    c.tie_embeddings = tied;
    REQUIRE(c.validate().is_ok());
    INFO((tied ? "tied" : "untied"));
    const auto w = rill::lm::Weights::random(c, tied ? 21 : 22).value();
    const auto tokens = tokens_of(80, c.vocab, 4);
    const auto ref = reference(w, tokens);
    for (rill::Context* ctx : {&small, &small_per_op, &small_gpu}) {
      auto model = make_model(*ctx, w, {.prefill_segment = 64});
      check_prefill_then_decode(model, tokens, 70, ref, 2e-4);
    }
    // Packed tables split into column blocks: f16 words of 64 bytes per column, and int8 and int4 in
    // groups of 2 rows, whose scales take 64 bytes per column: two blocks of up to 1,024 columns each.
    using rill::lm::WeightStorage;
    auto whole = rill_test::make_context();
    for (auto [storage, format, group] : {std::tuple{WeightStorage::kF16, rill::ops::WeightFormat::kF16, 64u},
                                          std::tuple{WeightStorage::kInt8, rill::ops::WeightFormat::kInt8, 2u},
                                          std::tuple{WeightStorage::kInt4, rill::ops::WeightFormat::kInt4, 2u}}) {
      INFO(rill::lm::weight_storage_name(storage));
      const rill::lm::ModelOptions o{
          .weights = storage, .int8_group = group, .int4_group = group, .prefill_segment = 64};
      const auto packed_ref = packed_reference(w, tokens, format, group);
      for (rill::Context* ctx : {&small, &small_per_op, &small_gpu}) {
        auto model = make_model(*ctx, w, o);
        CHECK(model.weight_bytes() == make_model(whole, w, o).weight_bytes());  // the blocks, counted once
        check_prefill_then_decode(model, tokens, 70, packed_ref, 2e-4);
      }
    }
  }
}

GPU_TEST_CASE("lm softmax baseline equals the reference and refuses positions past its capacity", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kSoftmax, LayerKind::kNorm}), 4).value();
  auto model = make_model(ctx, w, {.prefill_segment = 8, .softmax_capacity = 24});
  const auto tokens = tokens_of(24, w.config().vocab, 5);
  const auto ref = reference(w, tokens);
  auto s = model.session().value();
  auto logits = s.prefill(std::span(tokens).first(19));
  REQUIRE(logits.is_ok());
  check_row(*logits, ref, 18, w.config().vocab, 2e-4, "prefill");
  for (size_t t = 19; t < 24; ++t) {
    auto step = s.decode(tokens[t]);
    REQUIRE(step.is_ok());
    check_row(*step, ref, t, w.config().vocab, 2e-4, "decode");
  }
  auto full = s.decode(0);
  CHECK(full.status().code() == rill::StatusCode::kOutOfRange);
  CHECK(full.status().message().find("softmax_capacity") != std::string::npos);
}

GPU_TEST_CASE("lm state save and restore resumes bit-identically", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 8).value();
  auto model = make_model(ctx, w, {.prefill_segment = 8});
  const auto tokens = tokens_of(30, w.config().vocab, 6);
  auto a = model.session().value();
  REQUIRE(a.prefill(std::span(tokens).first(13)).is_ok());
  const std::string path = rill_test::temp_path("lm-state.safetensors");
  REQUIRE(a.save_state(path).is_ok());
  std::vector<std::vector<float>> expected;
  for (size_t t = 13; t < 30; ++t) expected.push_back(a.decode(tokens[t]).value());

  auto b = model.session().value();
  REQUIRE(b.prefill(std::span(tokens).first(3)).is_ok());  // some other conversation first
  REQUIRE(b.restore_state(path).is_ok());
  CHECK(b.position() == 13);
  for (size_t t = 13; t < 30; ++t) {
    const auto got = b.decode(tokens[t]).value();
    CHECK(std::memcmp(got.data(), expected[t - 13].data(), got.size() * sizeof(float)) == 0);
  }
  // reset() is a fresh conversation.
  REQUIRE(b.reset().is_ok());
  CHECK(b.position() == 0);
  auto fresh = model.session().value();
  CHECK(b.prefill(std::span(tokens).first(9)).value() == fresh.prefill(std::span(tokens).first(9)).value());

  // The same file's weights packed (int8 in groups of 8 and of 4, int4) compute other values: the
  // state restores into none of them, nor theirs into the plain model.
  using rill::lm::WeightStorage;
  auto int8 = make_model(ctx, w, {.weights = WeightStorage::kInt8, .int8_group = 8, .prefill_segment = 8});
  auto int8_4 = make_model(ctx, w, {.weights = WeightStorage::kInt8, .int8_group = 4, .prefill_segment = 8});
  auto int4 = make_model(ctx, w, {.weights = WeightStorage::kInt4, .prefill_segment = 8});
  for (rill::lm::Model* other : {&int8, &int8_4, &int4}) {
    auto s = other->session().value();
    const rill::Status refused = s.restore_state(path);
    CHECK(refused.code() == rill::StatusCode::kFailedPrecondition);
    CHECK(refused.message().find("other weights") != std::string::npos);
  }
  auto packed = int8.session().value();
  REQUIRE(packed.prefill(std::span(tokens).first(5)).is_ok());
  REQUIRE(packed.save_state(path).is_ok());
  CHECK(int8.session().value().restore_state(path).is_ok());
  CHECK(model.session().value().restore_state(path).code() == rill::StatusCode::kFailedPrecondition);
  CHECK(int8_4.session().value().restore_state(path).code() == rill::StatusCode::kFailedPrecondition);
}

// A model without softmax layers runs to position 2^32 - 2. Its DiagAttention keys are those of
// the current block only, so decoding at the same offset in a block near the end gives the same
// logits as near the start; the decode kernels' loops over keys once wrapped there (re-reading stale
// cache rows, and on a GPU looping about 2^32 times).
GPU_TEST_CASE("lm decoding in the last blocks before position 2^32 matches the same block offsets at the start",
              "[lm][gpu]") {
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 8).value();
  const auto tokens = tokens_of(30, w.config().vocab, 3);
  const uint64_t block = w.config().block, near_start = 13;
  const uint64_t near_end = (uint64_t(1) << 32) - 2 * block + near_start % block;  // same offset in its block
  // The state after near_start tokens, saved again as if at near_end: the norm layer's state has no
  // position in it, the diag layer's cache holds the current block's keys by offset. (Rewritten as a
  // v2 state: the v3 checksum covers the position.)
  for (const auto& [family, decode] : {std::pair{"cpu", "fused"}, {"cpu", "per-op"}, {"gpu", "fused"}}) {
    INFO(family << " family, decoding " << decode);
    auto options = rill_test::validated_options();
    options.kernel_variant = family;
    options.kernel_plan = std::string("lm_decode=") + decode;
    auto ctx = rill_test::make_context(options);
    auto model = make_model(ctx, w, {.prefill_segment = 8});
    auto start = model.session().value();
    REQUIRE(start.prefill(std::span(tokens).first(near_start)).is_ok());
    auto file = rill::SafetensorsFile::from_bytes(start.serialize_state().value()).value();
    rill::SafetensorsWriter moved;
    for (const auto& [key, value] : file.metadata())
      if (key != "checksum") REQUIRE(moved.set_metadata(key, value).is_ok());
    REQUIRE(moved.set_metadata("format", "rill.lm.state.v2").is_ok());
    REQUIRE(moved.set_metadata("position", std::to_string(near_end)).is_ok());
    for (const rill::SafetensorsEntry& e : file.entries())
      REQUIRE(moved.add(e.name, e.dtype, e.shape, file.tensor(e.name, e.dtype, e.shape).value()).is_ok());
    auto end = model.session().value();
    REQUIRE(end.deserialize_state(moved.serialize()).is_ok());
    REQUIRE(end.position() == near_end);
    // Through the last block boundary to the last position a token may take.
    for (uint64_t t = 0; near_end + t <= (uint64_t(1) << 32) - 2; ++t) {
      INFO("decode " << t);
      const auto expected = start.decode(tokens[near_start + t]).value();
      const auto got = end.decode(tokens[near_start + t]).value();
      REQUIRE(got.size() == expected.size());
      CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
    }
    CHECK(end.decode(tokens[0]).status().code() == rill::StatusCode::kOutOfRange);
  }
}

GPU_TEST_CASE("lm prefill reports progress and stops on request; the rest goes on bit-identically", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 8).value();
  auto model = make_model(ctx, w, {.prefill_segment = 8});  // block 8: segments of one block
  const auto tokens = tokens_of(45, w.config().vocab, 9);
  const auto bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };

  auto whole = model.session().value();
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  const auto expected = whole
                            .prefill(tokens, rill::lm::PrefillHooks{.progress =
                                                                        [&](uint64_t d, uint64_t t) {
                                                                          seen.push_back({d, t});
                                                                        },
                                                                    .stop = [] { return false; }})
                            .value();
  CHECK(seen == std::vector<std::pair<uint64_t, uint64_t>>{{8, 45}, {16, 45}, {24, 45}, {32, 45}, {40, 45}, {45, 45}});

  // Stopped before the third segment: the session holds 16 positions, and the rest goes on exactly.
  auto s = model.session().value();
  int asked = 0;
  auto stopped = s.prefill(tokens, rill::lm::PrefillHooks{.stop = [&] { return ++asked == 3; }});
  REQUIRE_FALSE(stopped.is_ok());
  CHECK(stopped.status().code() == rill::StatusCode::kCancelled);
  CHECK(stopped.status().message().find("position 16 after 16 of 45 tokens") != std::string::npos);
  CHECK(s.position() == 16);
  CHECK(bits(s.prefill(std::span(tokens).subspan(16)).value(), expected));
  CHECK(bits(s.decode(tokens[3]).value(), whole.decode(tokens[3]).value()));

  // A stop asked at once does nothing.
  auto idle = model.session().value();
  CHECK(idle.prefill(tokens, rill::lm::PrefillHooks{.stop = [] { return true; }}).status().code() ==
        rill::StatusCode::kCancelled);
  CHECK(idle.position() == 0);

  // From mid-block the prefill decodes up to the boundary, and may stop between those steps too.
  auto plain = model.session().value();
  REQUIRE(plain.prefill(std::span(tokens).first(3)).is_ok());
  const auto plain_logits = plain.prefill(std::span(tokens).subspan(3)).value();
  auto mid = model.session().value();
  REQUIRE(mid.prefill(std::span(tokens).first(3)).is_ok());
  asked = 0;
  auto early = mid.prefill(std::span(tokens).subspan(3), rill::lm::PrefillHooks{.stop = [&] { return ++asked == 3; }});
  CHECK(early.status().code() == rill::StatusCode::kCancelled);
  CHECK(mid.position() == 5);
  CHECK(bits(mid.prefill(std::span(tokens).subspan(5)).value(), plain_logits));

  // Out of host memory after a segment ran (here thrown from the progress hook): ResourceExhausted,
  // not an exception through the API, and the session is spent until a reset (its position moved).
  auto starved = model.session().value();
  auto thrown =
      starved.prefill(tokens, rill::lm::PrefillHooks{.progress = [](uint64_t, uint64_t) { throw std::bad_alloc(); }});
  CHECK(thrown.status().code() == rill::StatusCode::kResourceExhausted);
  CHECK_THAT(thrown.status().message(), Catch::Contains("lm prefill: out of host memory"));
  CHECK(starved.decode(tokens[0]).status().code() == rill::StatusCode::kFailedPrecondition);
  CHECK(starved.serialize_state().status().code() == rill::StatusCode::kFailedPrecondition);
  REQUIRE(starved.reset().is_ok());
  CHECK(bits(starved.prefill(tokens).value(), expected));
}

GPU_TEST_CASE("lm sessions report their device memory and free the prefill's on request", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 8).value();
  auto model = make_model(ctx, w, {.prefill_segment = 16});
  const auto tokens = tokens_of(60, w.config().vocab, 4);
  const auto bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  auto kept = model.session().value();
  auto s = model.session().value();
  CHECK(s.device_bytes() == s.state_bytes());  // nothing recorded yet
  const uint64_t before_prefill = ctx.memory_stats().used_bytes;
  REQUIRE(s.prefill(std::span(tokens).first(40)).is_ok());
  const uint64_t segment_bytes = ctx.memory_stats().used_bytes - before_prefill;
  CHECK(segment_bytes > 0);
  CHECK(s.device_bytes() == s.state_bytes() + segment_bytes);
  const uint64_t before_step = ctx.memory_stats().used_bytes;
  REQUIRE(s.decode(tokens[40]).is_ok());
  const uint64_t step_bytes = ctx.memory_stats().used_bytes - before_step;
  CHECK(s.device_bytes() == s.state_bytes() + segment_bytes + step_bytes);

  // Released: the context gets the segment's bytes back, and nothing else changes.
  const uint64_t held = ctx.memory_stats().used_bytes;
  s.release_prefill_memory();
  CHECK(ctx.memory_stats().used_bytes == held - segment_bytes);
  CHECK(s.device_bytes() == s.state_bytes() + step_bytes);
  CHECK(s.position() == 41);
  REQUIRE(kept.prefill(std::span(tokens).first(40)).is_ok());
  REQUIRE(kept.decode(tokens[40]).is_ok());
  CHECK(bits(s.decode(tokens[41]).value(), kept.decode(tokens[41]).value()));
  // The next prefill records its segment again and computes the same.
  CHECK(bits(s.prefill(std::span(tokens).subspan(42)).value(), kept.prefill(std::span(tokens).subspan(42)).value()));
  CHECK(s.device_bytes() > s.state_bytes() + step_bytes);
  s.release_prefill_memory();
  s.release_prefill_memory();  // twice is harmless
  CHECK(s.device_bytes() == s.state_bytes() + step_bytes);
}

// A kernel limit on the model's own sizes (here the block attention's serial work per invocation
// for a 128-position block of head width 128, past a CPU driver's loop budget) refuses every segment
// length alike: the prefill returns it at once and keeps the session's segment length (it halved
// down to one block, for nothing, and kept that for the session).
GPU_TEST_CASE("lm prefill returns a limit that shorter segments hit alike without halving", "[lm][gpu]") {
  ModelConfig c = tiny({LayerKind::kDiag});
  c.vocab = 300;
  c.width = 256;
  c.heads = 2;
  c.ffn_width = 64;
  c.block = 128;
  REQUIRE(c.validate().is_ok());
  const auto w = rill::lm::Weights::random(c, 8).value();
  auto ctx = rill_test::make_context();
  auto model = make_model(ctx, w, {.prefill_segment = 2048});
  auto s = model.session().value();
  const auto tokens = tokens_of(2100, c.vocab, 2);
  const auto logits = s.prefill(tokens);
  if (logits.is_ok()) {  // a device without such a budget runs it whole
    CHECK(s.position() == tokens.size());
  } else {
    INFO(logits.status().to_string());
    CHECK(logits.status().code() == rill::StatusCode::kOutOfRange);
    CHECK(logits.status().message().find("loop iterations") != std::string::npos);
    CHECK(s.position() == 0);
  }
  CHECK(s.prefill_segment() == 2048);
}

// A DiagAttention block is one workgroup: a device that runs fewer invocations at once (128 is
// Vulkan's minimum) refuses the model when it is made, not at its first prompt.
GPU_TEST_CASE("lm models whose attention block exceeds a workgroup are refused at creation", "[lm][gpu]") {
  ModelConfig c = tiny({LayerKind::kDiag, LayerKind::kNorm});
  c.block = 256;
  REQUIRE(c.validate().is_ok());
  const auto w = rill::lm::Weights::random(c, 12).value();
  auto options = rill_test::validated_options();
  options.limit_profile = "vulkan11-minimum";
  auto minimum = rill_test::make_context(options);
  const auto refused = rill::lm::Model::create(minimum, w);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(refused.status().message().find("block 256") != std::string::npos);
  c.layer_kinds = {LayerKind::kNorm, LayerKind::kNorm};  // no DiagAttention: the block is not used
  REQUIRE(c.validate().is_ok());
  CHECK(rill::lm::Model::create(minimum, rill::lm::Weights::random(c, 12).value()).is_ok());
}

GPU_TEST_CASE("lm prefill halves its segments where they do not fit in memory", "[lm][gpu]") {
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 8).value();
  const auto tokens = tokens_of(1500, w.config().vocab, 5);
  rill::ContextOptions bounded = rill_test::validated_options();
  // Small blocks then: the weights', the uploads' and one for activations (staging, host memory on
  // a discrete GPU, is outside the budget).
  bounded.device_memory_budget = 4ull << 20;
  auto small_ctx = rill_test::make_context(bounded);
  auto model = make_model(small_ctx, w, {.prefill_segment = 1024});
  auto s = model.session().value();
  CHECK(s.prefill_segment() == 1024);
  auto logits = s.prefill(tokens);
  INFO(logits.status().to_string());
  REQUIRE(logits.is_ok());
  const uint32_t used = s.prefill_segment();
  CHECK(used < 1024);
  CHECK(used % w.config().block == 0);
  const rill::MemoryStats held_stats = small_ctx.memory_stats();
  CHECK(held_stats.reserved_bytes - held_stats.staging_bytes <= bounded.device_memory_budget);
  // The same as a model that prefills in segments of that length from the start, bit for bit.
  auto ctx = rill_test::make_context();
  auto fitting = make_model(ctx, w, {.prefill_segment = used});
  auto reference = fitting.session().value();
  const auto expected = reference.prefill(tokens).value();
  CHECK(std::memcmp(logits->data(), expected.data(), expected.size() * sizeof(float)) == 0);
  CHECK(s.position() == tokens.size());
  // Where not even one block fits, the prefill fails cleanly and the session stays usable.
  rill::ContextOptions tiny_budget = rill_test::validated_options();
  tiny_budget.device_memory_budget = 3ull << 20;  // no block left for activations
  auto tiny_ctx = rill_test::make_context(tiny_budget);
  auto tiny_model = make_model(tiny_ctx, w, {.prefill_segment = 1024});
  auto t = tiny_model.session().value();
  const uint64_t held = tiny_ctx.memory_stats().used_bytes;
  const auto refused = t.prefill(tokens);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == rill::StatusCode::kResourceExhausted);
  CHECK(t.position() == 0);
  CHECK(t.prefill_segment() == w.config().block);
  CHECK(tiny_ctx.memory_stats().used_bytes == held);  // every attempt's allocations went back
  // The stop hook is asked once before each segment, not again as a segment is halved (a hook that
  // stops on its n-th ask stopped early).
  auto asked_ctx = rill_test::make_context(bounded);
  auto asked_model = make_model(asked_ctx, w, {.prefill_segment = 1024});
  auto asked = asked_model.session().value();
  size_t asks = 0;
  REQUIRE(asked.prefill(tokens, rill::lm::PrefillHooks{.progress = {}, .stop = [&] { return ++asks == 0; }}).is_ok());
  const uint32_t settled = asked.prefill_segment();
  CHECK(settled < 1024);
  CHECK(asks == (tokens.size() + settled - 1) / settled);
}

// A segment whose activations exceed one storage binding (the 385M model's FFN rows of 2048
// positions on a device that binds 128 MiB; here 64 KiB bindings) halves too, to the same logits.
GPU_TEST_CASE("lm prefill halves its segments where their activations exceed a binding", "[lm][gpu][own-limits]") {
  ModelConfig c = tiny({LayerKind::kNorm});
  c.ffn_width = 64;  // a GLU row of 128 floats: 512 bytes, 128 rows to a 64 KiB binding
  const auto w = rill::lm::Weights::random(c, 9).value();
  const auto tokens = tokens_of(700, c.vocab, 6);
  auto options = rill_test::validated_options();
  options.limit_profile = "small-bindings";
  auto small = rill_test::make_context(options);
  auto model = make_model(small, w, {.prefill_segment = 1024});
  auto s = model.session().value();
  const auto logits = s.prefill(tokens);
  INFO(logits.status().to_string());
  REQUIRE(logits.is_ok());
  CHECK(s.prefill_segment() < 1024);
  // On the same context: a limit profile of the environment would pick other kernels elsewhere.
  auto fitting = make_model(small, w, {.prefill_segment = s.prefill_segment()});
  const auto expected = fitting.session().value().prefill(tokens).value();
  CHECK(std::memcmp(logits->data(), expected.data(), expected.size() * sizeof(float)) == 0);
}

GPU_TEST_CASE("lm state files from elsewhere are refused and leave the session unchanged", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 8).value();
  const auto other = rill::lm::Weights::random(tiny({LayerKind::kNorm, LayerKind::kNorm}), 8).value();
  auto model = make_model(ctx, w);
  auto other_model = make_model(ctx, other);
  auto s = model.session().value();
  const auto tokens = tokens_of(12, w.config().vocab);
  REQUIRE(s.prefill(tokens).is_ok());
  const auto good = s.serialize_state().value();

  auto o = other_model.session().value();
  const auto foreign = o.deserialize_state(good);
  CHECK(foreign.code() == rill::StatusCode::kFailedPrecondition);
  CHECK(foreign.message().find("config") != std::string::npos);

  auto t = model.session().value();
  REQUIRE(t.prefill(std::span(tokens).first(4)).is_ok());
  std::vector<uint8_t> truncated(good.begin(), good.begin() + good.size() / 2);
  CHECK(t.deserialize_state(truncated).code() == rill::StatusCode::kDataLoss);
  const std::string cut = rill_test::temp_path("cut-state");
  REQUIRE(rill::write_file_atomic(cut, truncated).is_ok());
  const rill::Status cut_status = t.restore_state(cut);
  CHECK(cut_status.code() == rill::StatusCode::kDataLoss);
  CHECK_THAT(cut_status.message(), Catch::Contains(cut) && !Catch::Contains("<memory>"));  // names the file
  std::vector<uint8_t> flipped = good;
  flipped[4] ^= 0x40;  // header length
  CHECK_FALSE(t.deserialize_state(flipped).is_ok());
  CHECK(t.position() == 4);
  CHECK(t.restore_state(rill_test::temp_path("no-such-state")).code() == rill::StatusCode::kNotFound);
  // A file far larger than a state is refused before it is read (a sparse 8 GiB file asked for
  // 8 GiB of host memory), and a FIFO without a writer is refused rather than waited on.
  const std::string huge = rill_test::temp_path("huge-state");
  { std::ofstream create(huge, std::ios::binary); }
  std::filesystem::resize_file(huge, t.state_bytes() + (4u << 20));
  CHECK(t.restore_state(huge).code() == rill::StatusCode::kOutOfRange);
  // The same bound for bytes from an app's storage or the network, refused before they are parsed.
  std::vector<uint8_t> padded = good;
  padded.resize(size_t(t.state_bytes() + (4u << 20)));
  const rill::Status oversized = t.deserialize_state(padded);
  CHECK(oversized.code() == rill::StatusCode::kOutOfRange);
  CHECK_THAT(oversized.message(), Catch::Contains("more than a state of this session"));
  std::filesystem::remove(huge);
#ifndef _WIN32  // no fifos there (the Windows file layer refuses pipes and devices by GetFileType)
  const std::string fifo = rill_test::temp_path("fifo-state");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(t.restore_state(fifo).code() == rill::StatusCode::kInvalidArgument);
  CHECK(rill::SafetensorsFile::open(fifo).status().code() == rill::StatusCode::kInvalidArgument);
  std::filesystem::remove(fifo);
#endif
  // A tensor no state holds is named.
  {
    auto file = rill::SafetensorsFile::from_bytes(good).value();
    rill::SafetensorsWriter extra;
    for (const auto& [key, value] : file.metadata()) REQUIRE(extra.set_metadata(key, value).is_ok());
    for (const rill::SafetensorsEntry& e : file.entries())
      REQUIRE(extra.add(e.name, e.dtype, e.shape, file.bytes(e)).is_ok());
    REQUIRE(extra.add_floats("layer9.state", {1}, std::vector<float>{0.0f}).is_ok());
    const rill::Status unknown = t.deserialize_state(extra.serialize());
    CHECK(unknown.code() == rill::StatusCode::kDataLoss);
    CHECK_THAT(unknown.message(), Catch::Contains("an unknown one: 'layer9.state'"));
  }
  // The checksum: a flipped low bit of a state value (finite either way) or a changed position is
  // refused; an older rill's v2 state (no checksum) still restores.
  {
    auto file = rill::SafetensorsFile::from_bytes(good).value();
    auto rewritten = [&](const std::string& position, bool flip, const std::string& format) {
      rill::SafetensorsWriter writer;
      for (const auto& [key, value] : file.metadata()) {
        if (!format.empty() && key == "checksum") continue;
        const std::string v = key == "position" ? position : key == "format" && !format.empty() ? format : value;
        REQUIRE(writer.set_metadata(key, v).is_ok());
      }
      for (const rill::SafetensorsEntry& e : file.entries()) {
        auto bytes = std::vector<uint8_t>(file.bytes(e).begin(), file.bytes(e).end());
        if (flip && e.name != "last_logits") bytes[0] ^= 1;
        REQUIRE(writer.add(e.name, e.dtype, e.shape, bytes).is_ok());
      }
      return writer.serialize();
    };
    const std::string saved_position = std::to_string(tokens.size());
    for (const auto& [position, flip] : {std::pair{saved_position, true}, std::pair{std::string("11"), false}}) {
      const rill::Status damaged = t.deserialize_state(rewritten(position, flip, ""));
      INFO(damaged.to_string());
      CHECK(damaged.code() == rill::StatusCode::kDataLoss);
      CHECK_THAT(damaged.message(), Catch::Contains("checksum does not match"));
    }
    CHECK(t.position() == 4);
    auto older = model.session().value();
    REQUIRE(older.deserialize_state(rewritten(saved_position, false, "rill.lm.state.v2")).is_ok());
    CHECK(older.position() == tokens.size());
    REQUIRE(t.deserialize_state(rewritten(saved_position, false, "")).is_ok());  // the file as saved
    CHECK(t.position() == tokens.size());
  }
}

// Two trainings of one config share the config's tag: the state also carries a tag of the weights,
// so one model's state is refused by the other (its continuation would be silently wrong), while
// the same weights loaded again take it, and a state saved before the tag existed restores.
GPU_TEST_CASE("lm states restore only into the weights that made them", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto config = tiny({LayerKind::kDiag, LayerKind::kNorm});
  const auto w = rill::lm::Weights::random(config, 8).value();
  auto model = make_model(ctx, w);
  auto s = model.session().value();
  const auto tokens = tokens_of(12, config.vocab);
  REQUIRE(s.prefill(tokens).is_ok());
  const auto saved = s.serialize_state().value();

  auto retrained = make_model(ctx, rill::lm::Weights::random(config, 9).value());
  auto r = retrained.session().value();
  const auto refused = r.deserialize_state(saved);
  CHECK(refused.code() == rill::StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.message(), Catch::Contains("other weights"));
  CHECK(r.position() == 0);

  // The same weights through a file, in another model: the same tag.
  const std::string cfg = rill_test::temp_path("lm-tag.json"), file = rill_test::temp_path("lm-tag.safetensors");
  REQUIRE(w.save(cfg, file).is_ok());
  auto reloaded = make_model(ctx, rill::lm::Weights::load(cfg, file).value());
  auto again = reloaded.session().value();
  REQUIRE(again.deserialize_state(saved).is_ok());
  CHECK(again.position() == tokens.size());

  // An older rill's state (format v1: no weights tag, no logits): restored, unchecked.
  const auto state = rill::SafetensorsFile::from_bytes(saved).value();
  rill::SafetensorsWriter old;
  for (const auto& [key, value] : state.metadata())
    if (key != "weights" && key != "checksum")
      REQUIRE(old.set_metadata(key, key == "format" ? "rill.lm.state.v1" : value).is_ok());
  for (const auto& e : state.entries())
    if (e.name != "last_logits") REQUIRE(old.add(e.name, e.dtype, e.shape, state.bytes(e)).is_ok());
  auto untagged = model.session().value();
  REQUIRE(untagged.deserialize_state(old.serialize()).is_ok());
  CHECK(untagged.last_logits().empty());
  auto next = untagged.decode(tokens[0]);
  auto expected = s.decode(tokens[0]);
  REQUIRE((next.is_ok() && expected.is_ok()));
  CHECK(*next == *expected);

  // A later state with its tag cut away is refused: only v1 states go unchecked.
  rill::SafetensorsWriter stripped;
  for (const auto& [key, value] : state.metadata())
    if (key != "weights") REQUIRE(stripped.set_metadata(key, value).is_ok());
  for (const auto& e : state.entries()) REQUIRE(stripped.add(e.name, e.dtype, e.shape, state.bytes(e)).is_ok());
  auto fooled = retrained.session().value();
  const auto cut = fooled.deserialize_state(stripped.serialize());
  CHECK(cut.code() == rill::StatusCode::kDataLoss);
  CHECK_THAT(cut.message(), Catch::Contains("without the tag"));
  CHECK(fooled.position() == 0);
}

// The logits after the last token travel with the session: kept when a stop ends a prefill, copied
// by a fork, saved and restored with the state, cleared by reset. A restored session draws its next
// token from them, as the session that saved it would have.
GPU_TEST_CASE("lm sessions keep the logits after their last token, in forks and saved states", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto config = tiny({LayerKind::kDiag, LayerKind::kNorm});
  auto model = make_model(ctx, rill::lm::Weights::random(config, 12).value(), {.prefill_segment = 8});
  const auto tokens = tokens_of(20, config.vocab);
  auto s = model.session().value();
  CHECK(s.last_logits().empty());
  const auto logits = s.prefill(tokens).value();
  auto last = [](const rill::lm::Session& session) {
    return std::vector<float>(session.last_logits().begin(), session.last_logits().end());
  };
  CHECK(last(s) == logits);
  CHECK(last(s.fork().value()) == logits);
  const auto saved = s.serialize_state().value();
  const auto stepped = s.decode(3).value();
  CHECK(last(s) == stepped);

  auto restored = model.session().value();
  REQUIRE(restored.deserialize_state(saved).is_ok());
  CHECK(last(restored) == logits);
  CHECK(restored.decode(3).value() == stepped);

  // Saved logits are f32 [vocab] at a position past 0, or the file is refused.
  const auto file = rill::SafetensorsFile::from_bytes(saved).value();
  auto rewritten = [&](bool logits_in_f16, const std::string& position) {
    rill::SafetensorsWriter w;
    for (const auto& [key, value] : file.metadata())
      REQUIRE(w.set_metadata(key, key == "position" ? position : value).is_ok());
    for (const auto& e : file.entries()) {
      if (e.name == "last_logits" && logits_in_f16) {
        REQUIRE(w.add(e.name, rill::TensorDType::kF16, e.shape, std::vector<uint8_t>(size_t(e.shape[0]) * 2)).is_ok());
      } else {
        REQUIRE(w.add(e.name, e.dtype, e.shape, file.bytes(e)).is_ok());
      }
    }
    return w.serialize();
  };
  auto strict = model.session().value();
  CHECK_FALSE(strict.deserialize_state(rewritten(true, "20")).is_ok());
  CHECK(strict.deserialize_state(rewritten(false, "0")).code() == rill::StatusCode::kDataLoss);
  CHECK(strict.position() == 0);
  REQUIRE(strict.deserialize_state(rewritten(false, "20")).is_ok());

  // A prefill stopped before its second segment keeps the first's positions and logits.
  auto stopped = model.session().value();
  int asked = 0;
  const auto cut = stopped.prefill(tokens, rill::lm::PrefillHooks{.stop = [&] { return ++asked == 2; }});
  REQUIRE(cut.status().code() == rill::StatusCode::kCancelled);
  REQUIRE(stopped.position() == 8);
  auto whole = model.session().value();
  CHECK(last(stopped) == whole.prefill(std::span(tokens).first(8)).value());
  REQUIRE(stopped.reset().is_ok());
  CHECK(stopped.last_logits().empty());
}

GPU_TEST_CASE("lm rejects bad tokens and options with clear errors", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 1).value();
  auto model = make_model(ctx, w);
  auto s = model.session().value();
  CHECK(s.prefill({}).status().code() == rill::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> bad = {1, 2, 37};
  const auto r = s.prefill(bad);
  CHECK(r.status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("token 2 is 37") != std::string::npos);
  CHECK(s.decode(99).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(s.position() == 0);
  // 0 leaves the segment to the device's plan; the model reports what it chose.
  const auto chosen = rill::lm::Model::create(ctx, w, {.prefill_segment = 0});
  REQUIRE(chosen.is_ok());
  CHECK(chosen->options().prefill_segment >= 2048);
  CHECK(rill::lm::Model::create(ctx, w, {.weights = rill::lm::WeightStorage::kInt8, .int8_group = 0}).status().code() ==
        rill::StatusCode::kInvalidArgument);
  CHECK(rill::lm::Model::create(ctx, w, {.weights = rill::lm::WeightStorage(7)}).status().code() ==
        rill::StatusCode::kInvalidArgument);
}

GPU_TEST_CASE("lm prefill memory does not grow with the prompt", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 2).value();
  auto model = make_model(ctx, w, {.prefill_segment = 16});
  auto peak_after = [&](size_t n) {
    auto s = model.session().value();
    REQUIRE(s.prefill(tokens_of(n, w.config().vocab)).is_ok());
    return ctx.memory_stats().peak_used_bytes;
  };
  const uint64_t four_segments = peak_after(64);
  const uint64_t sixteen_segments = peak_after(256);
  CHECK(sixteen_segments == four_segments);
}
