// TransNormer LM on the host (no GPU): config JSON and validation, the weight list, seeded random
// weights, saving and loading in F32/F16/BF16, rejection of bad weight files, and the CPU
// reference checked against independent O(N^2) formulas, causality and a hand-computed case.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <string>
#include <vector>

#include "lm/lm_internal.hpp"
#include "rill/files.hpp"
#include "rill/half.hpp"
#include "rill/lm.hpp"
#include "rill/log.hpp"
#include "temp_path.hpp"
#include "transnormer.hpp"

namespace {

using rill::StatusCode;
using rill::TensorDType;
using rill::lm::LayerKind;
using rill::lm::ModelConfig;
using rill::lm::NormKind;
using rill::lm::Weights;
using rill::ops::FeatureMap;
using rill::ops::GluActivation;
using WeightMap = std::map<std::string, std::vector<float>>;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// A small config that differs from the defaults in every field.
ModelConfig unusual_config() {
  ModelConfig c;
  c.vocab = 300;
  c.width = 48;
  c.heads = 4;
  c.ffn_width = 80;
  c.layers = 3;
  c.layer_kinds = {LayerKind::kNorm, LayerKind::kDiag, LayerKind::kNorm};
  c.block = 17;
  c.chunk = 5;
  c.feature_map = FeatureMap::kRelu;
  c.decay = {0.9f, 0.5f, 1.0f, 0.25f};
  c.norm = NormKind::kSimpleRmsNorm;
  c.norm_eps = 1e-5f;
  c.glu_activation = GluActivation::kSigmoid;
  c.tie_embeddings = true;
  return c;
}

ModelConfig small_config(uint32_t layers = 2) {
  ModelConfig c;
  c.vocab = 13;
  c.width = 8;
  c.heads = 2;
  c.ffn_width = 6;
  c.layers = layers;
  c.block = 4;
  return c;
}

void check_same_config(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.vocab == b.vocab);
  CHECK(a.width == b.width);
  CHECK(a.heads == b.heads);
  CHECK(a.ffn_width == b.ffn_width);
  CHECK(a.layers == b.layers);
  CHECK(a.layer_kinds == b.layer_kinds);
  CHECK(a.block == b.block);
  CHECK(a.chunk == b.chunk);
  CHECK(a.feature_map == b.feature_map);
  CHECK(a.decay == b.decay);
  CHECK(a.norm == b.norm);
  CHECK(a.norm_eps == b.norm_eps);
  CHECK(a.glu_activation == b.glu_activation);
  CHECK(a.tie_embeddings == b.tie_embeddings);
}

}  // namespace

// ---- config ----

TEST_CASE("lm config: JSON round trip keeps every field", "[lm]") {
  ModelConfig c = unusual_config();
  REQUIRE(c.validate().is_ok());
  const std::string text = rill::lm::config_to_json(c);
  auto back = rill::lm::config_from_json(text);
  INFO(text);
  REQUIRE(back.is_ok());
  check_same_config(c, back.value());
  CHECK(rill::lm::config_to_json(back.value()) == text);
  CHECK_THAT(text, Catch::Contains("\"norm_eps\":1e-05"));  // floats written in their shortest form
}

// One decay value per head is written as a flat array (always so for one layer): a model of more
// heads than the 256 rows a nested array may have reads back too.
TEST_CASE("lm config: a per-head decay of many heads reads back", "[lm]") {
  ModelConfig c;
  c.layers = 1;
  c.layer_kinds = {LayerKind::kNorm};
  c.width = 512;
  c.heads = 512;
  c.decay.assign(512, 0.5f);
  c.decay[300] = 0.25f;
  REQUIRE(c.validate().is_ok());
  auto back = rill::lm::config_from_json(rill::lm::config_to_json(c));
  INFO(back.status().to_string());
  REQUIRE(back.is_ok());
  CHECK(back->decay == c.decay);
  // Nested rows stay bounded by the layers' limit.
  std::string rows = R"({"decay": [)";
  for (int i = 0; i < 257; ++i) rows += std::string(i ? "," : "") + "[0.5]";
  CHECK(rill::lm::config_from_json(rows + "]}").status().code() == rill::StatusCode::kInvalidArgument);
}

TEST_CASE("lm config: missing keys take the defaults; layer kinds split in half", "[lm]") {
  auto c = rill::lm::config_from_json("{}");
  REQUIRE(c.is_ok());
  check_same_config(c.value(), [] {
    ModelConfig d;
    d.layer_kinds = {LayerKind::kDiag, LayerKind::kDiag, LayerKind::kDiag,
                     LayerKind::kNorm, LayerKind::kNorm, LayerKind::kNorm};
    return d;
  }());
  auto one = rill::lm::config_from_json(R"({"layers": 1})");
  REQUIRE(one.is_ok());
  CHECK(one->layer_kinds == std::vector<LayerKind>{LayerKind::kNorm});
  auto five = rill::lm::config_from_json(R"({"layers": 5, "layer_kinds": []})");
  REQUIRE(five.is_ok());
  CHECK(five->layer_kinds == std::vector<LayerKind>{LayerKind::kDiag, LayerKind::kDiag, LayerKind::kNorm,
                                                     LayerKind::kNorm, LayerKind::kNorm});
  auto given = rill::lm::config_from_json(R"({"layers": 2, "layer_kinds": ["norm", "diag"]})");
  REQUIRE(given.is_ok());
  CHECK(given->layer_kinds == std::vector<LayerKind>{LayerKind::kNorm, LayerKind::kDiag});
}

TEST_CASE("lm config: the named decay schedule is TransNormerLLM's for the config's heads and layers", "[lm]") {
  for (const char* text : {R"({"decay": "transnormerllm", "heads": 4, "width": 64, "layers": 3})",
                           R"({"heads": 4, "width": 64, "layers": 3, "decay": "transnormerllm"})"}) {
    INFO(text);
    auto c = rill::lm::config_from_json(text);
    REQUIRE(c.is_ok());
    CHECK(c->decay == rill::lm::transnormerllm_decay(4, 3).value());
  }
}

TEST_CASE("lm config: every invalid field is an error naming the key", "[lm]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"vocab": 0})", "vocab"},
      {R"({"vocab": 1048577})", "vocab"},
      {R"({"width": 0})", "width"},
      {R"({"heads": 0})", "heads"},
      {R"({"width": 10, "heads": 3})", "heads"},
      {R"({"width": 258, "heads": 2})", "heads"},  // head dimension 129
      {R"({"ffn_width": 0})", "ffn_width"},
      {R"({"layers": 0})", "layers"},
      {R"({"layers": 257})", "layers"},
      {R"({"layers": 2, "layer_kinds": ["diag"]})", "layer_kinds"},
      {R"({"layers": 2, "layer_kinds": ["diag", "linear"]})", "layer_kinds[1]"},
      {R"({"layers": 1, "layer_kinds": [1]})", "layer_kinds[0]"},
      {R"({"layer_kinds": "diag"})", "layer_kinds"},
      {R"({"block": 0})", "block"},
      {R"({"block": 257})", "block"},
      {R"({"chunk": 0})", "chunk"},
      {R"({"chunk": 65})", "chunk"},
      {R"({"decay": [0.5]})", "decay"},
      {R"({"heads": 2, "decay": [0.5, 0]})", "decay[1]"},
      {R"({"heads": 2, "decay": [1.5, 0.5]})", "decay[0]"},
      {R"({"heads": 2, "decay": [0.5, -0.1]})", "decay[1]"},
      {R"({"heads": 2, "decay": [0.5, 1e300]})", "decay[1]"},
      {R"({"heads": 1, "decay": ["a"]})", "decay[0]"},
      {R"({"decay": 0.5})", "decay"},
      // Negative values are values, never the named schedule (an old marker made [-1] that).
      {R"({"heads": 1, "width": 64, "decay": [-1]})", "decay[0]"},
      {R"({"heads": 1, "width": 64, "decay": [-0.5]})", "decay[0]"},
      {R"({"heads": 1, "width": 64, "layers": 2, "decay": [[-3], [0.5]]})", "decay[0]"},
      // Rows per layer: one per layer, one value per head, never rows that only add up.
      {R"({"heads": 2, "width": 64, "layers": 2, "decay": [[0.9], [0.8, 0.7, 0.6]]})", "decay[1]"},
      {R"({"heads": 4, "width": 64, "layers": 2, "decay": [[0.9, 0.8], [0.7, 0.6]]})", "rows per layer"},
      {R"({"heads": 2, "width": 64, "layers": 2, "decay": [[0.9, 0.8]]})", "rows per layer"},
      {R"({"heads": 1, "width": 64, "layers": 1, "decay": [[]]})", "rows per layer"},
      // The schedule's size comes from layers and heads: checked before anything is allocated.
      {R"({"decay": "transnormerllm", "layers": 4294967295, "heads": 4096})", "layers"},
      {R"({"decay": "transnormerllm", "layers": 100000000})", "layers"},
      {R"({"norm_eps": 0})", "norm_eps"},
      {R"({"norm_eps": 1e-45})", "norm_eps"},
      {R"({"embed_scale": 1e-40})", "embed_scale"},  // subnormal: a GPU flushing it zeroes the embeddings
      {R"({"heads": 1, "width": 64, "decay": [1e-40]})", "decay[0]"},
      {R"({"norm_eps": -1e-6})", "norm_eps"},
      {R"({"norm_eps": 1e300})", "norm_eps"},
      {R"({"norm_eps": "small"})", "norm_eps"},
      {R"({"vocab": 1048576, "width": 4096, "heads": 32})", "vocab * width"},
      {R"({"width": 65536, "heads": 512})", "width * width"},
      {R"({"width": 256, "ffn_width": 8388608})", "ffn_width"},
      {R"({"vocab": "256"})", "vocab"},
      {R"({"vocab": 256.5})", "vocab"},
      {R"({"vocab": -1})", "vocab"},
      {R"({"vocab": 4294967296})", "vocab"},
      {R"({"tie_embeddings": 1})", "tie_embeddings"},
      {R"({"feature_map": "gelu"})", "feature_map"},
      {R"({"feature_map": 1})", "feature_map"},
      {R"({"norm": "layernorm"})", "norm"},
      {R"({"glu_activation": "relu"})", "glu_activation"},
      {R"({"width": 64, "width": 128})", "'width' appears twice"},
      {std::string(R"({"width": 64})") + '\0', "NUL byte"},
      {R"({"widht": 256})", "widht"},
      {R"({"decay": [[[[[[[[[[0.5]]]]]]]]]]})", "nests deeper"},
  };
  for (const auto& [json, key] : cases) {
    auto c = rill::lm::config_from_json(json);
    INFO(json << " -> " << (c.is_ok() ? std::string("OK") : c.status().to_string()));
    REQUIRE_FALSE(c.is_ok());
    CHECK(c.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(c.status().message(), Catch::Contains(key));
  }
  for (const char* text : {"", "{", "[1, 2]", "7", "null"}) {
    auto c = rill::lm::config_from_json(text);
    INFO(text);
    REQUIRE_FALSE(c.is_ok());
    CHECK(c.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("lm config: validate() checks a config built in code", "[lm]") {
  ModelConfig c = small_config();
  c.decay = {0.5f, NAN};
  const rill::Status s = c.validate();
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("decay[1]"));
  c = small_config();
  c.layer_kinds = {LayerKind::kNorm};
  CHECK_THAT(c.validate().message(), Catch::Contains("layer_kinds"));
  c = small_config();
  c.feature_map = static_cast<FeatureMap>(9);
  CHECK_THAT(c.validate().message(), Catch::Contains("feature_map"));
}

TEST_CASE("lm config: load_config reads a file and names it in errors", "[lm]") {
  const std::string path = rill_test::temp_path("config.json");
  write_text(path, R"({"vocab": 100, "width": 16, "heads": 2, "layers": 2})");
  auto c = rill::lm::load_config(path);
  REQUIRE(c.is_ok());
  CHECK(c->vocab == 100);
  CHECK(c->width == 16);
  write_text(path, R"({"vocab": 100, "width": 16, "heads": 3})");
  auto bad = rill::lm::load_config(path);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains(path) && Catch::Contains("heads"));
  std::filesystem::remove(path);
  auto missing = rill::lm::load_config(path);
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains(path));
}

TEST_CASE("lm config: the fingerprint is stable and tells configs apart", "[lm]") {
  ModelConfig a = small_config();  // layer_kinds empty
  ModelConfig b = small_config();
  REQUIRE(b.validate().is_ok());  // layer_kinds filled
  const std::string fa = rill::lm::detail::config_fingerprint(a);
  CHECK(fa.size() == 16);
  CHECK(fa.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(fa == rill::lm::detail::config_fingerprint(b));
  b.decay = {0.5f, 0.25f};
  CHECK(fa != rill::lm::detail::config_fingerprint(b));
  b = a;
  b.norm_eps = 2e-6f;
  CHECK(fa != rill::lm::detail::config_fingerprint(b));
}

// ---- weights ----

TEST_CASE("lm weights: the weight list follows the norm kind, layer kinds and tying", "[lm]") {
  ModelConfig c = small_config();
  REQUIRE(c.validate().is_ok());  // layer 0 diag, layer 1 norm
  std::vector<std::string> names;
  for (const auto& s : rill::lm::weight_specs(c)) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{
                     "embed",          "layers.0.attn_norm", "layers.0.wq",  "layers.0.wk",       "layers.0.wv",
                     "layers.0.wo",    "layers.0.ffn_norm",  "layers.0.wu",  "layers.0.wg",       "layers.0.wd",
                     "layers.1.attn_norm", "layers.1.wq",    "layers.1.wk",  "layers.1.wv",       "layers.1.out_norm",
                     "layers.1.wo",    "layers.1.ffn_norm",  "layers.1.wu",  "layers.1.wg",       "layers.1.wd",
                     "final_norm",     "head"});
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& s : rill::lm::weight_specs(c)) shapes[s.name] = s.shape;
  CHECK(shapes["embed"] == std::vector<int64_t>{13, 8});
  CHECK(shapes["layers.1.wq"] == std::vector<int64_t>{2, 8, 4});
  CHECK(shapes["layers.1.out_norm"] == std::vector<int64_t>{8});
  CHECK(shapes["layers.0.wo"] == std::vector<int64_t>{8, 8});
  CHECK(shapes["layers.0.wu"] == std::vector<int64_t>{8, 6});
  CHECK(shapes["layers.0.wd"] == std::vector<int64_t>{6, 8});
  CHECK(shapes["head"] == std::vector<int64_t>{8, 13});

  c.norm = NormKind::kSimpleRmsNorm;
  c.tie_embeddings = true;
  names.clear();
  for (const auto& s : rill::lm::weight_specs(c)) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"embed", "layers.0.wq", "layers.0.wk", "layers.0.wv", "layers.0.wo",
                                          "layers.0.wu", "layers.0.wg", "layers.0.wd", "layers.1.wq",
                                          "layers.1.wk", "layers.1.wv", "layers.1.wo", "layers.1.wu",
                                          "layers.1.wg", "layers.1.wd"});
}

TEST_CASE("lm weights: random weights are deterministic and keyed by name", "[lm]") {
  const ModelConfig c = small_config();
  auto a = Weights::random(c, 7);
  auto b = Weights::random(c, 7);
  auto other = Weights::random(c, 8);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  REQUIRE(other.is_ok());
  ModelConfig tied = c;
  tied.tie_embeddings = true;
  tied.norm = NormKind::kSimpleRmsNorm;
  auto t = Weights::random(tied, 7);
  REQUIRE(t.is_ok());
  for (const auto& spec : rill::lm::weight_specs(a->config())) {
    INFO(spec.name);
    const std::vector<float> wa = a->floats(spec.name).value();
    CHECK(wa == b->floats(spec.name).value());
    if (spec.shape.size() > 1) CHECK(wa != other->floats(spec.name).value());
    // Draws are keyed by name: tensors the other config lacks (gains, head) shift nothing.
    if (spec.name != "head" && spec.shape.size() > 1) CHECK(wa == t->floats(spec.name).value());
    CHECK(a->dtype(spec.name).value() == TensorDType::kF32);
    CHECK(a->bytes(spec.name).value().size() == wa.size() * 4);
  }
  // Pinned draws: a changed generator would silently change every published seed.
  const std::vector<float> embed = a->floats("embed").value();
  INFO(std::setprecision(9) << embed[0] << " " << embed[1] << " " << embed[2] << " " << embed[3]);
  CHECK(embed[0] == Approx(-0.419818372).epsilon(1e-6));
  CHECK(embed[1] == Approx(-0.468077779).epsilon(1e-6));
  CHECK(embed[2] == Approx(0.985839784).epsilon(1e-6));
  CHECK(embed[3] == Approx(-0.305007011).epsilon(1e-6));
  CHECK(a->floats("nope").status().code() == StatusCode::kNotFound);
  CHECK(a->bytes("layers.9.wq").status().code() == StatusCode::kNotFound);
  ModelConfig bad = c;
  bad.heads = 3;
  CHECK(Weights::random(bad, 1).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("lm weights: random weights have unit gains and variance 1 / fan_in", "[lm]") {
  ModelConfig c;
  c.vocab = 256;
  c.width = 64;
  c.heads = 4;
  c.ffn_width = 96;
  c.layers = 2;
  auto w = Weights::random(c, 1234);
  REQUIRE(w.is_ok());
  auto moments = [](const std::vector<float>& v, double& mean, double& var, double& within_one) {
    double s = 0, ss = 0, inside = 0;
    for (float x : v) s += x;
    mean = s / double(v.size());
    for (float x : v) ss += (x - mean) * (x - mean);
    var = ss / double(v.size());
    for (float x : v) inside += std::fabs(x - mean) < std::sqrt(var) ? 1 : 0;
    within_one = inside / double(v.size());
  };
  const std::vector<std::pair<std::string, double>> matrices = {
      {"embed", 1.0}, {"layers.0.wq", 64}, {"layers.1.wv", 64}, {"layers.0.wo", 64},
      {"layers.1.wg", 64}, {"layers.0.wd", 96}, {"head", 64}};
  for (const auto& [name, fan_in] : matrices) {
    const std::vector<float> v = w->floats(name).value();
    double mean = 0, var = 0, within_one = 0;
    moments(v, mean, var, within_one);
    INFO(name << ": mean " << mean << " var * fan_in " << var * fan_in << " within one sd " << within_one);
    CHECK(std::fabs(mean) * std::sqrt(fan_in) < 0.06);
    CHECK(var * fan_in == Approx(1.0).epsilon(0.1));
    CHECK(within_one == Approx(0.6827).margin(0.03));
  }
  for (const char* gain : {"layers.0.attn_norm", "layers.1.out_norm", "layers.1.ffn_norm", "final_norm"})
    CHECK(w->floats(gain).value() == std::vector<float>(64, 1.0f));
}

TEST_CASE("lm weights: bf16 conversion rounds to nearest even", "[lm]") {
  CHECK(rill::float_to_bf16(1.0f) == 0x3f80);
  CHECK(rill::float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);               // tie: stays even
  CHECK(rill::float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);           // tie: up to even
  CHECK(rill::float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);    // above the tie
  CHECK(rill::float_to_bf16(-0.0f) == 0x8000);
  CHECK(rill::float_to_bf16(FLT_MAX) == 0x7f80);                      // rounds to Inf
  CHECK(rill::float_to_bf16(-INFINITY) == 0xff80);
  CHECK(std::isnan(rill::bf16_to_float(rill::float_to_bf16(NAN))));
  CHECK(std::isnan(rill::bf16_to_float(rill::float_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // low payload
  CHECK(rill::bf16_to_float(0x4049) == 3.140625f);
}

TEST_CASE("lm weights: save and load back in F32, F16 and BF16", "[lm]") {
  const ModelConfig c = small_config();
  const Weights w = Weights::random(c, 99).value();
  const std::string cfg = rill_test::temp_path("save.json"), file = rill_test::temp_path("save.safetensors");
  for (TensorDType dtype : {TensorDType::kF32, TensorDType::kF16, TensorDType::kBF16}) {
    INFO(rill::dtype_name(dtype));
    REQUIRE(w.save(cfg, file, dtype).is_ok());
    auto loaded = Weights::load(cfg, file);
    REQUIRE(loaded.is_ok());
    CHECK(rill::lm::config_to_json(loaded->config()) == rill::lm::config_to_json(w.config()));
    for (const auto& spec : rill::lm::weight_specs(w.config())) {
      INFO(spec.name);
      std::vector<float> expect = w.floats(spec.name).value();
      for (float& x : expect) {
        if (dtype == TensorDType::kF16) x = rill::half_to_float(rill::float_to_half(x));
        if (dtype == TensorDType::kBF16) x = rill::bf16_to_float(rill::float_to_bf16(x));
      }
      CHECK(loaded->dtype(spec.name).value() == dtype);
      CHECK(loaded->floats(spec.name).value() == expect);
      CHECK(loaded->bytes(spec.name).value().size() == expect.size() * rill::dtype_size(dtype));
    }
    // Saving in the stored dtype copies the bits; saving F16 as F32 is exact.
    const std::string cfg2 = rill_test::temp_path("save2.json"), file2 = rill_test::temp_path("save2.safetensors");
    REQUIRE(loaded->save(cfg2, file2, dtype).is_ok());
    auto again = Weights::load(cfg2, file2);
    REQUIRE(again.is_ok());
    REQUIRE(loaded->save(cfg2, file2, TensorDType::kF32).is_ok());
    auto widened = Weights::load(cfg2, file2);
    REQUIRE(widened.is_ok());
    for (const auto& spec : rill::lm::weight_specs(w.config())) {
      const auto a = loaded->bytes(spec.name).value(), b = again->bytes(spec.name).value();
      CHECK(std::vector<uint8_t>(a.begin(), a.end()) == std::vector<uint8_t>(b.begin(), b.end()));
      CHECK(widened->floats(spec.name).value() == loaded->floats(spec.name).value());
    }
    std::filesystem::remove(cfg2);
    std::filesystem::remove(file2);
  }
  CHECK(w.save(cfg, file, TensorDType::kI32).code() == StatusCode::kInvalidArgument);
  // The config and the weights in one file: the config written second replaced the weights. Refused
  // before anything is written, through another spelling of the path too.
  const auto before = rill::read_file(file, uint64_t(1) << 30);
  REQUIRE(before.is_ok());
  const std::string same =
      (std::filesystem::path(file).parent_path() / "." / std::filesystem::path(file).filename()).string();
  const rill::Status clash = w.save(same, file);
  CHECK(clash.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(clash.message(), Catch::Contains("name the same file"));
  CHECK(rill::read_file(file, uint64_t(1) << 30).value() == before.value());
  CHECK(Weights::load(cfg, file).is_ok());
  CHECK(w.save("", file).code() == StatusCode::kInvalidArgument);  // no path: an error, not a thrown filesystem_error
  CHECK(w.save(cfg, "").code() == StatusCode::kInvalidArgument);
  CHECK_FALSE(rill::same_file("", file));
  std::filesystem::remove(cfg);
  std::filesystem::remove(file);
}

namespace {

// How to spoil a weights file.
struct Spoil {
  std::string skip;                  // leave this tensor out
  std::string extra;                 // add an unexpected tensor
  std::string reshape;               // store this one with its dimensions reversed
  std::string as_i32;                // store this one as I32
  std::string nan;                   // put a NaN into this one at flat index 3
  std::string huge;                  // put 1e5 (past f16's range) into this one at flat index 3
};

std::vector<uint8_t> weights_file(const Weights& w, const Spoil& spoil) {
  rill::SafetensorsWriter out;
  for (const auto& spec : rill::lm::weight_specs(w.config())) {
    if (spec.name == spoil.skip) continue;
    std::vector<float> v = w.floats(spec.name).value();
    if (spec.name == spoil.nan) v.at(3) = std::nanf("");
    if (spec.name == spoil.huge) v.at(3) = 1e5f;
    std::vector<int64_t> shape = spec.shape;
    if (spec.name == spoil.reshape) std::reverse(shape.begin(), shape.end());
    const auto bytes = std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
    REQUIRE(out.add(spec.name, spec.name == spoil.as_i32 ? TensorDType::kI32 : TensorDType::kF32, shape, bytes).is_ok());
  }
  if (!spoil.extra.empty()) REQUIRE(out.add_floats(spoil.extra, {2}, std::vector<float>{1, 2}).is_ok());
  return out.serialize();
}

}  // namespace

TEST_CASE("lm weights: a save that would round a weight to infinity is refused", "[lm]") {
  const Weights w = Weights::random(small_config(), 6).value();
  const std::string cfg = rill_test::temp_path("huge.json"), file = rill_test::temp_path("huge.safetensors");
  REQUIRE(w.save(cfg, file, TensorDType::kF32).is_ok());
  const std::string name = rill::lm::weight_specs(w.config()).front().name;
  const std::vector<uint8_t> bytes = weights_file(w, {.huge = name});
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  const auto loaded = Weights::load(cfg, file);
  REQUIRE(loaded.is_ok());  // finite in f32
  const std::string out_cfg = rill_test::temp_path("huge-out.json"), out = rill_test::temp_path("huge-out.safetensors");
  const rill::Status f16 = loaded->save(out_cfg, out, TensorDType::kF16);  // 1e5 is past f16's 65504
  CHECK(f16.code() == StatusCode::kOutOfRange);
  CHECK(f16.message().find(name) != std::string::npos);
  REQUIRE(loaded->save(out_cfg, out, TensorDType::kBF16).is_ok());  // within bf16's range
  CHECK(Weights::load(out_cfg, out).is_ok());
  for (const std::string& f : {cfg, file, out_cfg, out}) std::filesystem::remove(f);
}

// LRPE angles multiply the position: an f32 model saved in 16 bits keeps them in f32, bit for bit.
TEST_CASE("lm weights: a 16-bit save keeps f32 LRPE angles in f32", "[lm]") {
  ModelConfig c = small_config();
  c.lrpe_layers = {1};  // layer 1 is NormAttention
  const Weights w = Weights::random(c, 7).value();
  const std::string cfg = rill_test::temp_path("lrpe16.json"), file = rill_test::temp_path("lrpe16.safetensors");
  for (const TensorDType dtype : {TensorDType::kF16, TensorDType::kBF16}) {
    REQUIRE(w.save(cfg, file, dtype).is_ok());
    auto loaded = Weights::load(cfg, file);
    REQUIRE(loaded.is_ok());
    CHECK(loaded->dtype("layers.1.lrpe_theta").value() == TensorDType::kF32);
    CHECK(loaded->floats("layers.1.lrpe_theta").value() == w.floats("layers.1.lrpe_theta").value());
    CHECK(loaded->dtype("layers.1.wq").value() == dtype);
    // Saved again in the same type: the angles stay f32 (copied), not rounded on a second pass.
    const Weights again = std::move(loaded).value();
    REQUIRE(again.save(cfg, file, dtype).is_ok());
    CHECK(Weights::load(cfg, file)->dtype("layers.1.lrpe_theta").value() == TensorDType::kF32);
  }
  for (const std::string& f : {cfg, file}) std::filesystem::remove(f);
}

TEST_CASE("lm weights: weights loaded with a config other than the one they were saved with are named", "[lm]") {
  const ModelConfig c = small_config();
  const Weights w = Weights::random(c, 5).value();
  const std::string cfg = rill_test::temp_path("pair.json"), file = rill_test::temp_path("pair.safetensors");
  REQUIRE(w.save(cfg, file, TensorDType::kF32).is_ok());
  std::vector<std::string> logged;
  rill::set_log_callback([&](rill::MessageSeverity, std::string_view m) { logged.emplace_back(m); });
  REQUIRE(Weights::load(cfg, file).is_ok());
  CHECK(logged.empty());  // the pair as saved
  // The same shapes under another epsilon and decay: loaded as asked, with a warning naming both.
  ModelConfig edited = c;
  edited.norm_eps = 1e-3f;
  edited.decay.assign(c.heads, 0.25f);
  auto file_again = rill::SafetensorsFile::open(file);
  REQUIRE(file_again.is_ok());
  const auto loaded = Weights::from_file(edited, std::move(file_again).value());
  rill::set_log_callback(nullptr);
  REQUIRE(loaded.is_ok());
  CHECK(loaded->config().norm_eps == 1e-3f);
  REQUIRE(logged.size() == 1);
  CHECK_THAT(logged[0],
             Catch::Contains("saved with another config") && Catch::Contains("norm_eps") && Catch::Contains("decay"));
  std::filesystem::remove(cfg);
  std::filesystem::remove(file);
}

TEST_CASE("lm weights: random weights larger than the machine's memory are refused before any is made", "[lm]") {
  // Every tensor within its own bound, 256 such layers: terabytes.
  auto huge =
      rill::lm::config_from_json(R"({"width": 16384, "heads": 128, "ffn_width": 65536, "layers": 256, "vocab": 256})");
  REQUIRE(huge.is_ok());
  const auto w = Weights::random(huge.value(), 1);
  REQUIRE_FALSE(w.is_ok());
  CHECK(w.status().code() == StatusCode::kResourceExhausted);
  CHECK_THAT(w.status().message(), Catch::Contains("machine's"));
}

TEST_CASE("lm weights: bad files are rejected naming the file and the tensor", "[lm]") {
  ModelConfig c = small_config();
  REQUIRE(c.validate().is_ok());
  const Weights w = Weights::random(c, 5).value();
  const std::string cfg = rill_test::temp_path("bad.json"), file = rill_test::temp_path("bad.safetensors");
  write_text(cfg, rill::lm::config_to_json(c));
  struct Case {
    Spoil spoil;
    StatusCode code;
    std::string tensor;
  };
  const std::vector<Case> cases = {
      {{.skip = "layers.1.wk"}, StatusCode::kNotFound, "layers.1.wk"},
      {{.skip = "layers.1.out_norm"}, StatusCode::kNotFound, "layers.1.out_norm"},
      {{.extra = "layers.0.out_norm"}, StatusCode::kInvalidArgument, "layers.0.out_norm"},  // diag layer has none
      {{.reshape = "layers.0.wu"}, StatusCode::kInvalidArgument, "layers.0.wu"},
      {{.as_i32 = "final_norm"}, StatusCode::kInvalidArgument, "final_norm"},
      {{.nan = "layers.1.wv"}, StatusCode::kDataLoss, "'layers.1.wv' holds a NaN at flat index 3"},
  };
  for (const Case& k : cases) {
    write_bytes(file, weights_file(w, k.spoil));
    auto loaded = Weights::load(cfg, file);
    INFO(k.tensor << ": " << (loaded.is_ok() ? std::string("OK") : loaded.status().to_string()));
    REQUIRE_FALSE(loaded.is_ok());
    CHECK(loaded.status().code() == k.code);
    CHECK_THAT(loaded.status().message(), Catch::Contains(k.tensor) && Catch::Contains(file));
  }
  // Truncated: the last tensor ("head") runs past the end of the data.
  std::vector<uint8_t> bytes = weights_file(w, {});
  bytes.resize(bytes.size() - 3);
  write_bytes(file, bytes);
  auto truncated = Weights::load(cfg, file);
  REQUIRE_FALSE(truncated.is_ok());
  CHECK(truncated.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(truncated.status().message(), Catch::Contains("head") && Catch::Contains(file));
  // A file for the untied model under a tied config: "head" is unexpected.
  write_bytes(file, weights_file(w, {}));
  ModelConfig tied = c;
  tied.tie_embeddings = true;
  auto mismatch = Weights::from_file(tied, rill::SafetensorsFile::open(file).value());
  REQUIRE_FALSE(mismatch.is_ok());
  CHECK_THAT(mismatch.status().message(), Catch::Contains("unexpected tensor 'head'"));
  std::filesystem::remove(cfg);
  std::filesystem::remove(file);
}

// ---- CPU reference ----

namespace {

WeightMap weight_map(const Weights& w) {
  WeightMap m;
  for (const auto& spec : rill::lm::weight_specs(w.config())) m[spec.name] = w.floats(spec.name).value();
  // Gains other than 1, so that a gain applied in the wrong place shows.
  for (auto& [name, v] : m)
    if (name.ends_with("norm"))
      for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f + 0.3f * std::sin(float(i + name.size()));
  return m;
}

rill::ref::TransNormerWeightFn weight_fn(const WeightMap& m) {
  return [&m](const std::string& name) { return m.at(name); };
}

double phi(FeatureMap f, double x) {
  if (f == FeatureMap::kElu1) return x > 0 ? x + 1 : std::exp(x);
  if (f == FeatureMap::kRelu) return std::max(x, 0.0);
  return x;
}

double act(GluActivation a, double x) {
  const double s = 1 / (1 + std::exp(-x));
  if (a == GluActivation::kSilu) return x * s;
  if (a == GluActivation::kSigmoid) return s;
  return x;
}

// The logits at position t of a one-layer model straight from the formulas in lm.hpp, every sum
// over the past recomputed from scratch: O(t^2) and independent of the reference's code.
std::vector<double> naive_logits(const ModelConfig& c, const WeightMap& w, const std::vector<uint32_t>& tokens,
                                 size_t t) {
  const size_t D = c.width, H = c.heads, Dh = D / H, F = c.ffn_width, V = c.vocab;
  const bool gains = c.norm == NormKind::kRmsNorm;
  auto normed = [&](std::vector<double> x, const std::string& gain) {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double r = 1 / std::sqrt(ss / double(D) + double(c.norm_eps));
    for (size_t i = 0; i < D; ++i) x[i] *= r * (gains ? double(w.at(gain)[i]) : 1.0);
    return x;
  };
  auto embed = [&](size_t s) {
    std::vector<double> x(D);
    for (size_t i = 0; i < D; ++i) x[i] = w.at("embed")[tokens[s] * D + i];
    return x;
  };
  // u_s projected by head h of a [H, D, Dh] weight, element j.
  auto proj = [&](const std::string& name, size_t s, size_t h, size_t j) {
    const std::vector<double> u = normed(embed(s), "layers.0.attn_norm");
    double acc = 0;
    for (size_t i = 0; i < D; ++i) acc += u[i] * w.at(name)[(h * D + i) * Dh + j];
    return acc;
  };
  std::vector<double> o(D, 0.0);
  for (size_t h = 0; h < H; ++h) {
    if (c.layer_kinds[0] == LayerKind::kDiag) {
      const size_t start = t / c.block * c.block;
      std::vector<double> p;
      double sum = 0;
      for (size_t s = start; s <= t; ++s) {
        double dot = 0;
        for (size_t j = 0; j < Dh; ++j) dot += proj("layers.0.wq", t, h, j) * proj("layers.0.wk", s, h, j);
        p.push_back(std::exp(dot / std::sqrt(double(Dh))));
        sum += p.back();
      }
      for (size_t s = start; s <= t; ++s)
        for (size_t j = 0; j < Dh; ++j) o[h * Dh + j] += p[s - start] / sum * proj("layers.0.wv", s, h, j);
    } else {
      const double lambda = c.decay.empty() ? 1.0 : c.decay[h];
      for (size_t s = 0; s <= t; ++s) {
        double dot = 0;
        for (size_t j = 0; j < Dh; ++j)
          dot += phi(c.feature_map, proj("layers.0.wq", t, h, j)) * phi(c.feature_map, proj("layers.0.wk", s, h, j));
        for (size_t j = 0; j < Dh; ++j) o[h * Dh + j] += std::pow(lambda, double(t - s)) * dot * proj("layers.0.wv", s, h, j);
      }
    }
  }
  if (c.layer_kinds[0] == LayerKind::kNorm) o = normed(o, "layers.0.out_norm");
  std::vector<double> x = embed(t);
  for (size_t j = 0; j < D; ++j)
    for (size_t i = 0; i < D; ++i) x[j] += o[i] * w.at("layers.0.wo")[i * D + j];
  const std::vector<double> g = normed(x, "layers.0.ffn_norm");
  std::vector<double> hidden(F);
  for (size_t f = 0; f < F; ++f) {
    double a = 0, b = 0;
    for (size_t i = 0; i < D; ++i) {
      a += g[i] * w.at("layers.0.wu")[i * F + f];
      b += g[i] * w.at("layers.0.wg")[i * F + f];
    }
    hidden[f] = a * act(c.glu_activation, b);
  }
  for (size_t j = 0; j < D; ++j)
    for (size_t f = 0; f < F; ++f) x[j] += hidden[f] * w.at("layers.0.wd")[f * D + j];
  const std::vector<double> xn = normed(x, "final_norm");
  std::vector<double> logits(V, 0.0);
  for (size_t v = 0; v < V; ++v)
    for (size_t i = 0; i < D; ++i)
      logits[v] += xn[i] * (c.tie_embeddings ? w.at("embed")[v * D + i] : w.at("head")[i * V + v]);
  return logits;
}

std::vector<uint32_t> some_tokens(size_t n, uint32_t vocab, uint32_t salt = 0) {
  std::vector<uint32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = uint32_t((7 * i + 3 + salt * i * i) % vocab);
  return t;
}

}  // namespace

TEST_CASE("lm reference: one layer matches the O(N^2) formulas", "[lm]") {
  struct Case {
    const char* what;
    LayerKind kind;
    FeatureMap feature;
    std::vector<float> decay;
    NormKind norm;
    GluActivation act;
    bool tied;
  };
  const std::vector<Case> cases = {
      {"norm, identity, no decay", LayerKind::kNorm, FeatureMap::kIdentity, {}, NormKind::kRmsNorm, GluActivation::kSilu, false},
      {"norm, elu1, decay", LayerKind::kNorm, FeatureMap::kElu1, {0.9f, 0.5f, 1.0f}, NormKind::kRmsNorm, GluActivation::kSigmoid, false},
      {"norm, relu, srmsnorm, tied", LayerKind::kNorm, FeatureMap::kRelu, {0.75f, 1.0f, 0.3f}, NormKind::kSimpleRmsNorm, GluActivation::kIdentity, true},
      {"diag", LayerKind::kDiag, FeatureMap::kElu1, {}, NormKind::kRmsNorm, GluActivation::kSilu, false},
      {"diag, srmsnorm, tied", LayerKind::kDiag, FeatureMap::kElu1, {}, NormKind::kSimpleRmsNorm, GluActivation::kSilu, true},
  };
  for (const Case& k : cases) {
    INFO(k.what);
    ModelConfig c;
    c.vocab = 11;
    c.width = 12;
    c.heads = 3;
    c.ffn_width = 10;
    c.layers = 1;
    c.layer_kinds = {k.kind};
    c.block = 5;
    c.feature_map = k.feature;
    c.decay = k.decay;
    c.norm = k.norm;
    c.norm_eps = 1e-5f;
    c.glu_activation = k.act;
    c.tie_embeddings = k.tied;
    const WeightMap w = weight_map(Weights::random(c, 3).value());
    const std::vector<uint32_t> tokens = some_tokens(20, c.vocab);
    const std::vector<float> logits = rill::ref::transnormer_logits(c, weight_fn(w), tokens);
    REQUIRE(logits.size() == tokens.size() * c.vocab);
    for (size_t t : {0, 1, 4, 5, 7, 19}) {
      const std::vector<double> expect = naive_logits(c, w, tokens, t);
      for (size_t v = 0; v < c.vocab; ++v) {
        INFO("position " << t << " token " << v);
        CHECK(logits[t * c.vocab + v] == Approx(expect[v]).epsilon(1e-5).margin(1e-5));
      }
    }
  }
}

TEST_CASE("lm reference: logits at t do not depend on later tokens", "[lm]") {
  ModelConfig c = small_config(3);
  c.layer_kinds = {LayerKind::kDiag, LayerKind::kNorm, LayerKind::kNorm};
  c.feature_map = FeatureMap::kElu1;
  c.decay = {0.8f, 0.95f};
  c.tie_embeddings = true;
  const WeightMap w = weight_map(Weights::random(c, 11).value());
  const size_t N = 23, cut = 10;
  std::vector<uint32_t> a = some_tokens(N, c.vocab), b = a;
  for (size_t t = cut; t < N; ++t) b[t] = (a[t] + 1 + uint32_t(t)) % c.vocab;
  const std::vector<float> la = rill::ref::transnormer_logits(c, weight_fn(w), a);
  const std::vector<float> lb = rill::ref::transnormer_logits(c, weight_fn(w), b);
  const size_t V = c.vocab;
  CHECK(std::vector<float>(la.begin(), la.begin() + cut * V) == std::vector<float>(lb.begin(), lb.begin() + cut * V));
  CHECK(std::vector<float>(la.begin() + cut * V, la.end()) != std::vector<float>(lb.begin() + cut * V, lb.end()));
  // A prefix run gives the same rows: nothing depends on the sequence length either.
  const std::vector<float> prefix = rill::ref::transnormer_logits(c, weight_fn(w), std::span(a).first(cut));
  CHECK(prefix == std::vector<float>(la.begin(), la.begin() + cut * V));
}

TEST_CASE("lm reference: a width-1 model computed by hand", "[lm]") {
  // D = H = Dh = F = 1, V = 2; layer 0 DiagAttention with blocks of 2, layer 1 NormAttention with
  // decay 1/2; SRMSNorm with eps 1 so that Norm(x) = x / sqrt(x^2 + 1) keeps magnitudes.
  ModelConfig c;
  c.vocab = 2;
  c.width = 1;
  c.heads = 1;
  c.ffn_width = 1;
  c.layers = 2;
  c.layer_kinds = {LayerKind::kDiag, LayerKind::kNorm};
  c.block = 2;
  c.feature_map = FeatureMap::kIdentity;
  c.decay = {0.5f};
  c.norm = NormKind::kSimpleRmsNorm;
  c.norm_eps = 1.0f;
  c.glu_activation = GluActivation::kIdentity;
  REQUIRE(c.validate().is_ok());
  WeightMap w = {{"embed", {2, -3}}, {"head", {1, -2}}};
  for (const char* p : {"layers.0.", "layers.1."}) {
    for (const char* m : {"wq", "wk", "wv", "wu", "wg"}) w[std::string(p) + m] = {1};
    w[std::string(p) + "wo"] = {0.5f};
    w[std::string(p) + "wd"] = {1};
  }
  const std::vector<uint32_t> tokens = {0, 1, 0};
  const std::vector<float> logits = rill::ref::transnormer_logits(c, weight_fn(w), tokens);

  auto n = [](double x) { return x / std::sqrt(x * x + 1); };
  auto glu = [&](double x) { return x + n(x) * n(x); };  // x + (g * 1) * (g * 1), identity activation
  // Layer 0: q = k = v = u = n(x). Position 0 and 2 (a new block) see only themselves: o = u.
  double x0 = 2, x1 = -3, x2 = 2;
  const double u0 = n(x0), u1 = n(x1);
  x0 = glu(x0 + 0.5 * u0);
  const double p0 = std::exp(u1 * u0), p1 = std::exp(u1 * u1);  // softmax over positions 0, 1
  x1 = glu(x1 + 0.5 * (p0 * u0 + p1 * u1) / (p0 + p1));
  x2 = x0;
  // Layer 1: o_t = u_t sum_{s<=t} 0.5^(t-s) u_s^2, then normed.
  const double v0 = n(x0), v1 = n(x1), v2 = n(x2);
  const double o0 = v0 * v0 * v0, o1 = v1 * (0.5 * v0 * v0 + v1 * v1), o2 = v2 * (0.25 * v0 * v0 + 0.5 * v1 * v1 + v2 * v2);
  x0 = glu(x0 + 0.5 * n(o0));
  x1 = glu(x1 + 0.5 * n(o1));
  x2 = glu(x2 + 0.5 * n(o2));
  const double expect[] = {n(x0), -2 * n(x0), n(x1), -2 * n(x1), n(x2), -2 * n(x2)};
  REQUIRE(logits.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    INFO("logit " << i);
    CHECK(logits[i] == Approx(expect[i]).epsilon(1e-6));
  }
}
