// Fused decoding of the TransNormer model (one dispatch group per layer) against the per-op graph
// and the CPU reference: every layer kind and option, forced GPU grids, odd-sized and texel
// weights, and the dispatches per token of the default model.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test.hpp"
#include "lm_test_models.hpp"
#include "op_test.hpp"
#include "rill/lm.hpp"
#include "transnormer.hpp"

using rill::lm::LayerKind;
using rill::lm::ModelConfig;
using rill_test::check_row;
using rill_test::make_model;
using rill_test::reference;
using rill_test::tiny;
using rill_test::tokens_of;

namespace {

// The tiny model at other widths (two heads).
ModelConfig two_heads(std::vector<LayerKind> kinds, uint32_t width, uint32_t ffn_width, uint32_t vocab) {
  ModelConfig c = tiny(std::move(kinds));
  c.width = width;
  c.heads = 2;
  c.ffn_width = ffn_width;
  c.vocab = vocab;
  REQUIRE(c.validate().is_ok());
  return c;
}

// Every width a multiple of 16 (heads of 16).
ModelConfig in_sixteens(std::vector<LayerKind> kinds) { return two_heads(std::move(kinds), 32, 48, 48); }

// Heads, FFN and vocabulary in 32s: CPU drivers' fused decoding shuffles its input rows (four
// columns per lane, eight lanes per head).
ModelConfig in_thirty_twos(std::vector<LayerKind> kinds) { return two_heads(std::move(kinds), 64, 64, 64); }

// Heads of 128, FFN 256, vocabulary 128: with f16 weights read as texels (16 columns per lane)
// every product is whole subgroups (FFN slices and logits of 128), so the inputs come by shuffles.
ModelConfig in_128s(std::vector<LayerKind> kinds) { return two_heads(std::move(kinds), 256, 256, 128); }

// Decodes `tokens` from position 0 with the fused kernels and with the per-op graph (both kernel
// families for the fused ones): every step's logits within tol of each other, and within ref_tol of
// the f32 reference (0: not compared - packed weights, whose per-op path is checked against the
// packed values above).
using FusedVariant = std::pair<const char*, const char*>;  // kernel family, extra kernel-plan items
// Both families at their planned grids.
const std::vector<FusedVariant> kBothFamilies = {{"cpu", ""}, {"gpu", ""}};

// The checks of one test share their contexts, one per kernel family and plan: a context creates
// each pipeline once, and on lavapipe a creation costs 0.1-0.5 s even from Mesa's cache (the
// texel sweep created 428 where 8 contexts suffice).
class FusedDecodeChecks {
 public:
  void check(const rill::lm::Weights& w, rill::lm::ModelOptions o, double tol, double ref_tol, const std::string& what,
             const std::vector<FusedVariant>& variants = kBothFamilies);

 private:
  rill::Context& context(const std::string& family, const std::string& plan) {
    const std::string key = family + "|" + plan;
    auto it = contexts_.find(key);
    if (it == contexts_.end()) {
      auto options = rill_test::validated_options();
      options.kernel_variant = family;
      options.kernel_plan = plan;
      it = contexts_.emplace(key, rill_test::make_context(options)).first;
    }
    return it->second;
  }
  std::map<std::string, rill::Context> contexts_;
};

void FusedDecodeChecks::check(const rill::lm::Weights& w, rill::lm::ModelOptions o, double tol, double ref_tol,
                              const std::string& what, const std::vector<FusedVariant>& variants) {
  const auto tokens = tokens_of(13, w.config().vocab, 7);
  const auto ref = reference(w, tokens);
  auto per_op = make_model(context("", "lm_decode=per-op"), w, o);
  auto s_ref = per_op.session().value();
  std::vector<std::vector<float>> expected;
  for (uint32_t t : tokens) {
    auto step = s_ref.decode(t);
    INFO(what << " (per-op): " << step.status().to_string());
    REQUIRE(step.is_ok());
    expected.push_back(std::move(step).value());
  }
  for (const auto& [family, grid] : variants) {
    auto model = make_model(context(family, std::string("lm_decode=fused") + grid), w, o);
    auto s = model.session().value();
    for (size_t t = 0; t < tokens.size(); ++t) {
      auto step = s.decode(tokens[t]);
      INFO(what << " (" << family << " family" << grid << "), step " << t << ": " << step.status().to_string());
      REQUIRE(step.is_ok());
      check_row(*step, expected[t], 0, w.config().vocab, tol, what + " against per-op");
      if (ref_tol > 0) check_row(*step, ref, t, w.config().vocab, ref_tol, what + " against the reference");
    }
  }
}

}  // namespace

GPU_TEST_CASE("lm fused decoding equals the per-op graph for every layer kind and option", "[lm][gpu][sweep]") {
  FusedDecodeChecks fused;
  ModelConfig c = tiny({LayerKind::kNorm});
  fused.check(rill::lm::Weights::random(c, 1).value(), {}, 1e-4, 2e-4, "one NormAttention layer");
  c = tiny({LayerKind::kDiag});
  fused.check(rill::lm::Weights::random(c, 2).value(), {}, 1e-4, 2e-4, "one DiagAttention layer");
  c = tiny({LayerKind::kSoftmax});
  fused.check(rill::lm::Weights::random(c, 3).value(), {.softmax_capacity = 16}, 1e-4, 2e-4, "one softmax layer");
  // TransNormerLLM's options: decay, SiLU maps, LRPE, output gate, SRMSNorm, tied scaled embedding.
  c = tiny({LayerKind::kNorm, LayerKind::kDiag, LayerKind::kNorm});
  c.decay = rill::lm::transnormerllm_decay(c.heads, c.layers).value();
  c.feature_map = rill::ops::FeatureMap::kSilu;
  c.lrpe_layers = {0, 2};
  c.output_gate = true;
  c.embed_scale = 2.5f;
  c.norm = rill::lm::NormKind::kSimpleRmsNorm;
  c.glu_activation = rill::ops::GluActivation::kIdentity;
  c.tie_embeddings = true;
  c.vocab = 40;  // every width a multiple of 4: CPU drivers take four columns per load (VEC4)
  REQUIRE(c.validate().is_ok());
  const auto llm = rill::lm::Weights::random(c, 4).value();
  fused.check(llm, {}, 1e-4, 2e-4, "TransNormerLLM options");
  fused.check(llm, {.weights = rill::lm::WeightStorage::kInt8, .int8_group = 16}, 1e-4, 0,
              "TransNormerLLM options, int8 weights");
  fused.check(llm, {.weights = rill::lm::WeightStorage::kF16}, 1e-4, 0, "TransNormerLLM options, f16 weights");
  fused.check(llm, {.weights = rill::lm::WeightStorage::kInt4, .int4_group = 16}, 1e-4, 0,
              "TransNormerLLM options, int4 weights");
  // The default groups (int8 64, int4 32) on a model narrower than them: each matrix's group is
  // clamped to its own rows (the width for up and gate, the FFN width for down), and one dispatch
  // takes them together (it refused the layer's FFN).
  fused.check(llm, {.weights = rill::lm::WeightStorage::kInt8}, 1e-4, 0, "TransNormerLLM options, int8 default group");
  fused.check(llm, {.weights = rill::lm::WeightStorage::kInt4}, 1e-4, 0, "TransNormerLLM options, int4 default group");
  // Sigmoid GLU, identity maps, untied head, int8 groups that do not divide the width.
  c = tiny({LayerKind::kDiag, LayerKind::kNorm, LayerKind::kSoftmax});
  c.feature_map = rill::ops::FeatureMap::kIdentity;
  c.glu_activation = rill::ops::GluActivation::kSigmoid;
  c.decay = {0.9f, 1.0f, 0.75f};
  const auto mixed = rill::lm::Weights::random(c, 5).value();
  fused.check(mixed, {.weights = rill::lm::WeightStorage::kInt8, .int8_group = 10, .softmax_capacity = 16}, 1e-4, 0,
              "mixed kinds, int8 weights");
  // Heads of 16 and widths in sixteens: int8 weights take 16 columns per invocation on CPU drivers.
  const ModelConfig wide = in_sixteens({LayerKind::kNorm, LayerKind::kDiag});
  fused.check(rill::lm::Weights::random(wide, 6).value(), {.weights = rill::lm::WeightStorage::kInt8, .int8_group = 8},
              1e-4, 0, "16 columns per lane, int8");
  // f16 activations: the paths round at the same points; the reference (f32 weights) is 2e-2 away.
  auto probe = rill_test::make_context();
  if (rill_test::float_dtypes(probe).back() == rill::DType::kF16) {
    fused.check(mixed, {.precision = rill::lm::Precision::kF16, .softmax_capacity = 16}, 2e-2, 4e-2,
                "mixed kinds, f16");
    fused.check(llm, {.precision = rill::lm::Precision::kF16}, 2e-2, 4e-2, "TransNormerLLM options, f16");
  }
}

// The GPU grid at a wide and a narrow forced size: the mixers' sums split over 16 and 2 invocations
// per column (64 x 4 with heads of 32), the FFN and logits in slices of 8 and 4 columns. The second
// model's widths are in fours: each invocation takes 4 columns and the rows split up to 128 ways
// (slices of no rows at the narrow products).
GPU_TEST_CASE("lm fused decoding at forced GPU grids equals the per-op graph", "[lm][gpu][sweep]") {
  FusedDecodeChecks fused;
  // 32 x 4 with loads of 4 rows: 6-row slices of the mixer's products, a batch and a tail each.
  const std::vector<FusedVariant> grids = {{"gpu", ",lm_decode_grid=512x8"},
                                           {"gpu", ",lm_decode_grid=64x4"},
                                           {"gpu", ",lm_decode_grid=32x4,lm_decode_rows=4"}};
  ModelConfig c = tiny({LayerKind::kNorm, LayerKind::kDiag, LayerKind::kSoftmax});
  c.decay = {0.9f, 1.0f, 0.75f};
  fused.check(rill::lm::Weights::random(c, 7).value(), {.softmax_capacity = 16}, 1e-4, 2e-4, "every layer kind", grids);
  c = tiny({LayerKind::kNorm, LayerKind::kDiag});
  c.lrpe_layers = {0};  // LRPE doubles the linear mixer's state rows
  c.output_gate = true;
  c.vocab = 40;
  REQUIRE(c.validate().is_ok());
  fused.check(rill::lm::Weights::random(c, 8).value(), {}, 1e-4, 2e-4, "LRPE and output gate", grids);
  fused.check(rill::lm::Weights::random(c, 9).value(), {.weights = rill::lm::WeightStorage::kF16}, 1e-4, 0,
              "LRPE and output gate, f16 weights", grids);
  // Forced columns per invocation: 16 on a GPU grid of 64 invocations (widths in sixteens; small
  // enough for a phone's 16 KiB of shared memory), 1 on the CPU one; weight loads 8 and 2 rows at a
  // time (the products' row slices leave tails of every length).
  fused.check(rill::lm::Weights::random(in_sixteens({LayerKind::kNorm, LayerKind::kSoftmax}), 10).value(),
              {.softmax_capacity = 16}, 1e-4, 2e-4, "forced columns per invocation",
              {{"gpu", ",lm_decode_grid=64x16,lm_decode_columns=16,lm_decode_rows=8"},
               {"cpu", ",lm_decode_columns=1,lm_decode_rows=2"}});
}

// Odd widths: every dense matrix has an odd element count, so its last element sits in a vec4 that
// ends past the bound buffer, where the element-wise weight reads (no column groups at widths not in
// fours) now take scalars. A vec4 read there is undefined without robust buffer access; lavapipe
// happens to return the element, so this checks the odd widths' results, not the bound.
GPU_TEST_CASE("lm fused decoding reads the last element of odd-sized weights", "[lm][gpu]") {
  FusedDecodeChecks fused;
  ModelConfig c = tiny({LayerKind::kNorm, LayerKind::kSoftmax});
  c.width = 15;
  c.heads = 3;
  c.ffn_width = 13;
  INFO(c.validate().to_string());
  REQUIRE(c.validate().is_ok());
  const auto w = rill::lm::Weights::random(c, 15).value();
  fused.check(w, {.softmax_capacity = 16}, 1e-4, 2e-4, "odd widths",
              {{"cpu", ",lm_decode_weights=buffer"}, {"gpu", ""}});
  fused.check(w, {.weights = rill::lm::WeightStorage::kF16, .softmax_capacity = 16}, 1e-4, 0, "odd widths, f16 weights",
              {{"cpu", ",lm_decode_weights=buffer"}, {"gpu", ""}});
}

// Dense f32 weights read as texels (CPU drivers' default, 16 columns per invocation where the widths
// are in sixteens) and from storage buffers, in both kernel families: texels on a GPU grid whose
// products split their rows, single columns through texel fetches, and storage buffers on the CPU
// grid where texels are the default.
// A sweep: every weight storage in every texel form. The decoding step on CPU drivers reads texels
// by default, so every other decoding test runs their host code too (the sanitizer build's share).
GPU_TEST_CASE("lm fused decoding with texel weights equals the per-op graph", "[lm][gpu][sweep]") {
  FusedDecodeChecks fused;
  const std::vector<FusedVariant> forms = {{"cpu", ""},
                                           {"cpu", ",lm_decode_weights=buffer"},
                                           {"cpu", ",lm_decode_weights=texel,lm_decode_columns=1"},
                                           {"gpu", ",lm_decode_weights=texel,lm_decode_grid=64x4,lm_decode_rows=4"}};
  ModelConfig c = in_sixteens({LayerKind::kNorm, LayerKind::kDiag, LayerKind::kSoftmax});
  c.decay = {0.9f, 0.75f};  // per head
  c.output_gate = true;
  INFO(c.validate().to_string());
  REQUIRE(c.validate().is_ok());
  auto untied = rill::lm::Weights::random(c, 11);
  REQUIRE(untied.is_ok());
  fused.check(*untied, {.softmax_capacity = 16}, 1e-4, 2e-4, "texel weights", forms);
  c.tie_embeddings = true;  // the head read transposed from the embedding, one texel component at a time
  auto tied = rill::lm::Weights::random(c, 12);
  REQUIRE(tied.is_ok());
  fused.check(*tied, {.softmax_capacity = 16}, 1e-4, 2e-4, "texel weights, tied head", forms);
  // int8 weights at 16 columns per invocation: their words and scales as texels (the CPU default;
  // a group of 8 rows and one of 24, which splits a row's walk at odd points) and from storage
  // buffers; the tied head is the packed embedding, read as texels too.
  const std::vector<FusedVariant> int8_forms = {{"cpu", ""}, {"cpu", ",lm_decode_weights=buffer"}};
  for (uint32_t group : {8u, 24u}) {
    const rill::lm::ModelOptions o{
        .weights = rill::lm::WeightStorage::kInt8, .int8_group = group, .softmax_capacity = 16};
    fused.check(*untied, o, 1e-4, 0, "int8 texel words", int8_forms);
    fused.check(*tied, o, 1e-4, 0, "int8 texel words, tied head", int8_forms);
    // int4 the same: two words of a row per invocation, either half of a texel.
    const rill::lm::ModelOptions o4{
        .weights = rill::lm::WeightStorage::kInt4, .int4_group = group, .softmax_capacity = 16};
    fused.check(*untied, o4, 1e-4, 0, "int4 texel words", int8_forms);
    fused.check(*tied, o4, 1e-4, 0, "int4 texel words, tied head", int8_forms);
  }
  // f16 weights: their words as texels at 16 columns per invocation (the CPU default here, two
  // texels per row), at 8 (one texel), from storage buffers, and as texels on a GPU grid whose
  // products load 8 rows at a time (row batches and tails).
  const std::vector<FusedVariant> f16_forms = {
      {"cpu", ""},
      {"cpu", ",lm_decode_columns=8"},
      {"cpu", ",lm_decode_weights=buffer"},
      {"gpu", ",lm_decode_weights=texel,lm_decode_grid=64x16,lm_decode_columns=16,lm_decode_rows=8"}};
  const rill::lm::ModelOptions f16{.weights = rill::lm::WeightStorage::kF16, .softmax_capacity = 16};
  fused.check(*untied, f16, 1e-4, 0, "f16 texel words", f16_forms);
  fused.check(*tied, f16, 1e-4, 0, "f16 texel words, tied head", f16_forms);
  // Heads of 32 (and FFN slices and logits of 32 on CPU drivers): every product in whole subgroups
  // of four columns per lane, so the CPU kernels take their input rows by subgroup shuffles
  // (test_kernel_plan_models.cpp checks that this shape's plan does).
  c = in_thirty_twos({LayerKind::kNorm, LayerKind::kDiag, LayerKind::kSoftmax});
  c.decay = {0.9f, 0.75f};
  c.output_gate = true;
  REQUIRE(c.validate().is_ok());
  fused.check(rill::lm::Weights::random(c, 13).value(), {.softmax_capacity = 16}, 1e-4, 2e-4,
              "texel weights, inputs by shuffles", {{"cpu", ""}});
  // f16 words read as texels, inputs by shuffles (test_kernel_plan_models.cpp checks this shape's plan),
  // against shared-memory inputs and storage buffers.
  c = in_128s({LayerKind::kNorm, LayerKind::kDiag, LayerKind::kSoftmax});
  c.decay = {0.9f, 0.75f};
  c.output_gate = true;
  REQUIRE(c.validate().is_ok());
  fused.check(rill::lm::Weights::random(c, 14).value(),
              {.weights = rill::lm::WeightStorage::kF16, .softmax_capacity = 16}, 1e-4, 0,
              "f16 texel words, inputs by shuffles",
              {{"cpu", ""}, {"cpu", ",lm_decode_shuffle=off"}, {"cpu", ",lm_decode_weights=buffer"}});
}

GPU_TEST_CASE("lm decoding the default model takes at most 20 dispatches per token", "[lm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    const auto w = rill::lm::Weights::random(ModelConfig{}, 3).value();
    auto model = make_model(ctx, w);
    auto s = model.session().value();
    CHECK(s.decode_dispatches() == 0);
    REQUIRE(s.decode(1).is_ok());
    // The embedding, 2 per layer, the logits.
    CHECK(s.decode_dispatches() == 2 + 2 * w.config().layers);
    CHECK(s.decode_dispatches() <= 20);
  }
}
