// TransNormer model configs: validation with messages that name the field, and JSON reading and
// writing. Config files are untrusted input: every key is type-checked, unknown keys are errors
// (a misspelt key silently taking its default would build a different model).
#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "core/file_io.hpp"
#include "core/fnv1a.hpp"
#include "core/json_keys.hpp"
#include "lm/lm_internal.hpp"
#include "rill/lm.hpp"

namespace rill::lm {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxVocab = 1u << 20;
constexpr uint32_t kMaxHeadDim = 128;
constexpr uint32_t kMaxLayers = 256;
constexpr uint32_t kMaxBlock = 256;
constexpr uint32_t kMaxChunk = 64;
// Every weight matrix must be indexable with 32-bit signed arithmetic in the shaders.
constexpr uint64_t kMaxElements = (1ull << 31) - 1;
constexpr size_t kMaxLmConfigNesting = 8;  // a config nests 3 deep ("decay" per layer and head)

Status field(bool ok, const std::string& what) { return ok ? Status::ok() : invalid_argument("lm config: " + what); }

std::string str(uint64_t v) { return std::to_string(v); }

// Name tables: the JSON spelling of every enum value.
struct FeatureMapName {
  ops::FeatureMap value;
  const char* name;
};
constexpr FeatureMapName kFeatureMaps[] = {
    {ops::FeatureMap::kIdentity, "identity"}, {ops::FeatureMap::kElu1, "elu1"}, {ops::FeatureMap::kRelu, "relu"},
    {ops::FeatureMap::kSilu, "silu"}};
struct GluName {
  ops::GluActivation value;
  const char* name;
};
constexpr GluName kGluActivations[] = {{ops::GluActivation::kSilu, "silu"},
                                       {ops::GluActivation::kSigmoid, "sigmoid"},
                                       {ops::GluActivation::kIdentity, "identity"}};
struct NormName {
  NormKind value;
  const char* name;
};
constexpr NormName kNorms[] = {{NormKind::kRmsNorm, "rmsnorm"}, {NormKind::kSimpleRmsNorm, "srmsnorm"}};
struct LayerName {
  LayerKind value;
  const char* name;
};
constexpr LayerName kLayerKinds[] = {{LayerKind::kDiag, "diag"}, {LayerKind::kNorm, "norm"}, {LayerKind::kSoftmax, "softmax"}};

template <typename Table, typename E>
const char* name_of(const Table& table, E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return nullptr;
}

template <typename Table>
std::string names_of(const Table& table) {
  std::string out;
  for (const auto& e : table) out += std::string(out.empty() ? "" : ", ") + e.name;
  return out;
}

// A float as the double with the shortest decimal form that reads back as the same float, so the
// JSON says 1e-06, not 9.99999997475243e-07.
double shortest(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

Status key_error(const std::string& key, const std::string& what) {
  return invalid_argument("lm config JSON: '" + key + "' " + what);
}

Status read_u32(const json& v, const std::string& key, uint32_t& out) {
  if (!v.is_number_integer()) return key_error(key, "must be a non-negative integer, got " + std::string(v.type_name()));
  // Negative integers are number_integer but not number_unsigned.
  if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) return key_error(key, "is out of range: " + v.dump());
  out = static_cast<uint32_t>(v.get<uint64_t>());
  return Status::ok();
}

Status read_float(const json& v, const std::string& key, float& out) {
  if (!v.is_number()) return key_error(key, "must be a number, got " + std::string(v.type_name()));
  const double d = v.get<double>();
  // Outside float's range the cast is undefined: say Inf, which validate() rejects by name.
  out = std::fabs(d) > double(FLT_MAX) ? (d > 0 ? INFINITY : -INFINITY) : static_cast<float>(d);
  return Status::ok();
}

Status read_bool(const json& v, const std::string& key, bool& out) {
  if (!v.is_boolean()) return key_error(key, "must be true or false, got " + std::string(v.type_name()));
  out = v.get<bool>();
  return Status::ok();
}

template <typename Table, typename E>
Status read_enum(const json& v, const std::string& key, const Table& table, E& out) {
  if (!v.is_string()) return key_error(key, "must be a string (" + names_of(table) + ")");
  const std::string s = v.get<std::string>();
  for (const auto& e : table)
    if (s == e.name) {
      out = e.value;
      return Status::ok();
    }
  return key_error(key, "is '" + s + "', not one of " + names_of(table));
}

// How "decay" was written, checked once "heads" and "layers" are known: a named schedule (filled in
// then), or rows per layer (as many rows as layers, each one value per head).
struct DecayForm {
  bool named = false;
  size_t rows = 0;  // 0: a flat array
};

Status read_key(const std::string& key, const json& v, ModelConfig& c, DecayForm& decay_form) {
  if (key == "vocab") return read_u32(v, key, c.vocab);
  if (key == "width") return read_u32(v, key, c.width);
  if (key == "heads") return read_u32(v, key, c.heads);
  if (key == "ffn_width") return read_u32(v, key, c.ffn_width);
  if (key == "layers") return read_u32(v, key, c.layers);
  if (key == "block") return read_u32(v, key, c.block);
  if (key == "chunk") return read_u32(v, key, c.chunk);
  if (key == "norm_eps") return read_float(v, key, c.norm_eps);
  if (key == "feature_map") return read_enum(v, key, kFeatureMaps, c.feature_map);
  if (key == "norm") return read_enum(v, key, kNorms, c.norm);
  if (key == "glu_activation") return read_enum(v, key, kGluActivations, c.glu_activation);
  if (key == "tie_embeddings") return read_bool(v, key, c.tie_embeddings);
  if (key == "layer_kinds") {
    if (!v.is_array()) return key_error(key, "must be an array of strings (" + names_of(kLayerKinds) + ")");
    if (v.size() > kMaxLayers) return key_error(key, "has " + str(v.size()) + " entries, more than " + str(kMaxLayers));
    c.layer_kinds.assign(v.size(), LayerKind::kNorm);
    for (size_t i = 0; i < v.size(); ++i)
      RILL_RETURN_IF_ERROR(read_enum(v[i], key + "[" + str(i) + "]", kLayerKinds, c.layer_kinds[i]));
    return Status::ok();
  }
  if (key == "embed_scale") return read_float(v, key, c.embed_scale);
  if (key == "output_gate") return read_bool(v, key, c.output_gate);
  if (key == "lrpe_layers") {
    if (!v.is_array()) return key_error(key, "must be an array of layer indices");
    if (v.size() > kMaxLayers) return key_error(key, "has " + str(v.size()) + " entries, more than " + str(kMaxLayers));
    c.lrpe_layers.assign(v.size(), 0);
    for (size_t i = 0; i < v.size(); ++i) RILL_RETURN_IF_ERROR(read_u32(v[i], key + "[" + str(i) + "]", c.lrpe_layers[i]));
    return Status::ok();
  }
  if (key == "decay") {
    if (v.is_string()) {
      if (v.get<std::string>() != "transnormerllm")
        return key_error(key, "is '" + v.get<std::string>() + "'; the only named schedule is 'transnormerllm'");
      decay_form = {.named = true};
      return Status::ok();
    }
    decay_form = {};
    if (!v.is_array()) return key_error(key, "must be an array of numbers, an array of arrays, or \"transnormerllm\"");
    // Rows (one per layer), or one value per head (which config_to_json writes for one layer).
    const size_t most = !v.empty() && v[0].is_array() ? kMaxLayers : (size_t(1) << 16);
    if (v.size() > most) return key_error(key, "has " + str(v.size()) + " entries, too many");
    c.decay.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = key + "[" + str(i) + "]";
      if (!v[i].is_array()) {
        RILL_RETURN_IF_ERROR(read_float(v[i], at, c.decay.emplace_back()));
        continue;
      }
      // One row per layer, kept flat, layer-major: every row as long as the first (the rows' count
      // and length are checked against layers and heads after every key is read).
      if (v[i].size() > (1u << 16)) return key_error(at, "has " + str(v[i].size()) + " entries, too many");
      if (v[0].is_array() && v[i].size() != v[0].size())
        return key_error(at, "has " + str(v[i].size()) + " entries where " + key + "[0] has " + str(v[0].size()));
      for (size_t h = 0; h < v[i].size(); ++h)
        RILL_RETURN_IF_ERROR(read_float(v[i][h], at + "[" + str(h) + "]", c.decay.emplace_back()));
    }
    const bool nested = !v.empty() && v[0].is_array();
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].is_array() != nested) return key_error(key, "mixes numbers and arrays");
    if (nested) decay_form.rows = v.size();
    return Status::ok();
  }
  return invalid_argument("lm config JSON: unknown key '" + key + "'");
}

}  // namespace

namespace detail {

std::vector<LayerKind> default_layer_kinds(uint32_t layers) {
  std::vector<LayerKind> kinds(layers, LayerKind::kNorm);
  for (uint32_t i = 0; i < layers / 2; ++i) kinds[i] = LayerKind::kDiag;
  return kinds;
}

}  // namespace detail

Status ModelConfig::validate() {
  RILL_RETURN_IF_ERROR(field(vocab >= 1 && vocab <= kMaxVocab, "vocab must be in [1, 2^20], got " + str(vocab)));
  RILL_RETURN_IF_ERROR(field(width >= 1, "width must be >= 1"));
  RILL_RETURN_IF_ERROR(field(heads >= 1, "heads must be >= 1"));
  RILL_RETURN_IF_ERROR(field(width % heads == 0, "width (" + str(width) + ") must be a multiple of heads (" + str(heads) + ")"));
  RILL_RETURN_IF_ERROR(field(head_dim() <= kMaxHeadDim, "width / heads (the head dimension) must be <= 128, got " + str(head_dim())));
  RILL_RETURN_IF_ERROR(field(ffn_width >= 1, "ffn_width must be >= 1"));
  RILL_RETURN_IF_ERROR(field(layers >= 1 && layers <= kMaxLayers, "layers must be in [1, 256], got " + str(layers)));
  if (layer_kinds.empty()) layer_kinds = detail::default_layer_kinds(layers);
  RILL_RETURN_IF_ERROR(field(layer_kinds.size() == layers, "layer_kinds has " + str(layer_kinds.size()) +
                                                                " entries but layers is " + str(layers)));
  for (LayerKind k : layer_kinds) RILL_RETURN_IF_ERROR(field(name_of(kLayerKinds, k) != nullptr, "layer_kinds holds an unknown kind"));
  RILL_RETURN_IF_ERROR(field(block >= 1 && block <= kMaxBlock, "block must be in [1, 256], got " + str(block)));
  RILL_RETURN_IF_ERROR(field(chunk >= 1 && chunk <= kMaxChunk, "chunk must be in [1, 64], got " + str(chunk)));
  RILL_RETURN_IF_ERROR(field(name_of(kFeatureMaps, feature_map) != nullptr, "feature_map is not a known value"));
  RILL_RETURN_IF_ERROR(field(name_of(kNorms, norm) != nullptr, "norm is not a known value"));
  RILL_RETURN_IF_ERROR(field(name_of(kGluActivations, glu_activation) != nullptr, "glu_activation is not a known value"));
  RILL_RETURN_IF_ERROR(field(decay.empty() || decay.size() == heads || decay.size() == uint64_t(layers) * heads,
                             "decay must be empty, or hold one value per head (" + str(heads) +
                                 ") or per layer and head (" + str(uint64_t(layers) * heads) + "), got " +
                                 str(decay.size())));
  // Subnormal values are refused too: a GPU may flush them to zero, where the reference would not.
  for (size_t h = 0; h < decay.size(); ++h)
    RILL_RETURN_IF_ERROR(
        field(std::isfinite(decay[h]) && decay[h] >= FLT_MIN && decay[h] <= 1.0f,
              "decay[" + str(h) + "] must be in (0, 1] and not subnormal, got " + std::to_string(decay[h])));
  // Not subnormal: a GPU that flushes it would scale every embedding to 0.
  RILL_RETURN_IF_ERROR(
      field(std::isfinite(embed_scale) && embed_scale >= FLT_MIN, "embed_scale must be finite, > 0 and not subnormal"));
  for (size_t i = 0; i < lrpe_layers.size(); ++i) {
    const uint32_t l = lrpe_layers[i];
    RILL_RETURN_IF_ERROR(field(l < layers, "lrpe_layers[" + str(i) + "] is " + str(l) + ", past the last layer"));
    RILL_RETURN_IF_ERROR(field(layer_kinds[l] == LayerKind::kNorm,
                               "lrpe_layers[" + str(i) + "]: layer " + str(l) + " is not a NormAttention layer"));
    for (size_t j = 0; j < i; ++j)
      RILL_RETURN_IF_ERROR(field(lrpe_layers[j] != l, "lrpe_layers names layer " + str(l) + " twice"));
  }
  RILL_RETURN_IF_ERROR(
      field(std::isfinite(norm_eps) && norm_eps >= FLT_MIN, "norm_eps must be finite, > 0 and not subnormal"));
  // No overflow: each factor is below 2^32.
  RILL_RETURN_IF_ERROR(field(uint64_t(vocab) * width <= kMaxElements, "vocab * width must be < 2^31 elements"));
  RILL_RETURN_IF_ERROR(field(uint64_t(width) * width <= kMaxElements, "width * width must be < 2^31 elements"));
  RILL_RETURN_IF_ERROR(field(uint64_t(width) * ffn_width <= kMaxElements, "width * ffn_width must be < 2^31 elements"));
  return Status::ok();
}

std::string config_to_json(const ModelConfig& c) {
  json j;  // keys come out sorted: the text is a stable function of the config
  j["vocab"] = c.vocab;
  j["width"] = c.width;
  j["heads"] = c.heads;
  j["ffn_width"] = c.ffn_width;
  j["layers"] = c.layers;
  json kinds = json::array();
  for (LayerKind k : c.layer_kinds) {
    const char* n = name_of(kLayerKinds, k);
    kinds.push_back(n ? n : "?");
  }
  j["layer_kinds"] = kinds;
  j["block"] = c.block;
  j["chunk"] = c.chunk;
  const char* fm = name_of(kFeatureMaps, c.feature_map);
  j["feature_map"] = fm ? fm : "?";
  json decay = json::array();
  if (c.decay.size() == uint64_t(c.layers) * c.heads && c.layers > 1) {  // per layer: one row each
    for (uint32_t l = 0; l < c.layers; ++l) {
      json row = json::array();
      for (uint32_t h = 0; h < c.heads; ++h) row.push_back(shortest(c.decay[size_t(l) * c.heads + h]));
      decay.push_back(row);
    }
  } else {
    for (float d : c.decay) decay.push_back(shortest(d));
  }
  j["decay"] = decay;
  const char* nm = name_of(kNorms, c.norm);
  j["norm"] = nm ? nm : "?";
  j["norm_eps"] = shortest(c.norm_eps);
  const char* act = name_of(kGluActivations, c.glu_activation);
  j["glu_activation"] = act ? act : "?";
  j["tie_embeddings"] = c.tie_embeddings;
  // Written only when used, so the configs (and fingerprints) of models without them are unchanged.
  if (c.embed_scale != 1.0f) j["embed_scale"] = shortest(c.embed_scale);
  if (c.output_gate) j["output_gate"] = true;
  if (!c.lrpe_layers.empty()) j["lrpe_layers"] = c.lrpe_layers;
  // NaN and Inf (invalid anyway) dump as null and fail to read back with a clear message.
  return j.dump();
}

Result<std::vector<float>> transnormerllm_decay(uint32_t heads, uint32_t layers) {
  // modeling_transnormer.py (OpenNLPLab/TransNormerLLM): _build_slope_tensor's get_slopes (ALiBi's
  // slopes) and slope_rate = slopes * (1 - idx / (num_layers - 1) + 1e-5), applied as exp(-slope).
  if (heads < 1 || heads > 4096) return invalid_argument("transnormerllm decay: heads must be in [1, 4096]");
  if (layers < 2) return invalid_argument("transnormerllm decay: needs at least 2 layers (the schedule divides by layers - 1)");
  if (layers > kMaxLayers)
    return invalid_argument("transnormerllm decay: layers must be at most " + std::to_string(kMaxLayers));
  // Slopes for a power of two n: start^(i+1) with start = 2^(-8/n).
  auto power_of_two = [](uint32_t n) {
    std::vector<double> s(n);
    const double start = std::pow(2.0, -8.0 / double(n));
    for (uint32_t i = 0; i < n; ++i) s[i] = std::pow(start, double(i + 1));
    return s;
  };
  std::vector<double> slopes;
  uint32_t closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  slopes = power_of_two(closest);
  if (closest != heads) {  // then every other slope of twice as many heads, until there are enough
    const std::vector<double> twice = power_of_two(2 * closest);
    for (uint32_t i = 0; slopes.size() < heads; i += 2) slopes.push_back(twice[i]);
  }
  std::vector<float> decay(size_t(layers) * heads);
  for (uint32_t l = 0; l < layers; ++l) {
    const double scale = 1.0 - double(l) / double(layers - 1) + 1e-5;
    for (uint32_t h = 0; h < heads; ++h) decay[size_t(l) * heads + h] = float(std::exp(-slopes[h] * scale));
  }
  return decay;
}

Result<ModelConfig> config_from_json(std::string_view text) {
  // nlohmann stops reading at a NUL and keeps one of two equal keys: refuse both first.
  if (text.find('\0') != std::string_view::npos) return invalid_argument("lm config JSON: contains a NUL byte");
  if (nests_deeper_than(text, kMaxLmConfigNesting))
    return invalid_argument("lm config JSON: nests deeper than a config does");
  if (auto dup = first_duplicate_key(text))
    return invalid_argument("lm config JSON: the key '" + *dup + "' appears twice in one object");
  const json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return invalid_argument("lm config JSON: not valid JSON");
  if (!j.is_object()) return invalid_argument("lm config JSON: not a JSON object");
  ModelConfig c;
  DecayForm decay_form;
  for (const auto& [key, value] : j.items()) RILL_RETURN_IF_ERROR(read_key(key, value, c, decay_form));
  // Rows per layer must be one per layer of one value per head: rows that merely add up to the
  // right count would give the layers each other's decays.
  if (decay_form.rows != 0 && (decay_form.rows != c.layers || c.decay.size() != uint64_t(c.layers) * c.heads))
    return invalid_argument("lm config JSON: 'decay' has " + str(decay_form.rows) + " rows of " +
                            str(c.decay.size() / decay_form.rows) + " values; rows per layer need " + str(c.layers) +
                            " rows (layers) of " + str(c.heads) + " values (heads)");
  if (decay_form.named) {  // "decay": "transnormerllm"
    auto schedule = transnormerllm_decay(c.heads, c.layers);
    if (!schedule.is_ok()) return schedule.status().with_context("lm config JSON: 'decay'");
    c.decay = std::move(schedule).value();
  }
  RILL_RETURN_IF_ERROR(c.validate());
  return c;
}

Result<ModelConfig> load_config(const std::string& path) {
  auto bytes = read_file(path, detail::kMaxConfigFileBytes);
  if (!bytes.is_ok()) return bytes.status();
  const std::vector<uint8_t>& b = bytes.value();
  auto config = config_from_json(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  if (!config.is_ok()) return config.status().with_context("'" + path + "'");
  return config;
}

namespace detail {

std::string config_fingerprint(const ModelConfig& config) {
  ModelConfig c = config;
  if (c.layer_kinds.empty()) c.layer_kinds = default_layer_kinds(c.layers);
  return Fnv1a().add(config_to_json(c)).hex();
}

}  // namespace detail

}  // namespace rill::lm
