// The weights of a TransNormer model on the host: the list of tensors a config needs, loading
// them from an untrusted safetensors file (checked against that list, kept mapped, not copied),
// seeded random initialisation that gives the same numbers on every platform, and saving.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/file_io.hpp"
#include "core/fnv1a.hpp"
#include "core/host_memory_guard.hpp"
#include "core/log.hpp"
#include "lm/lm_internal.hpp"
#include "platform/host_resources.hpp"
#include "rill/half.hpp"
#include "rill/lm.hpp"

namespace rill::lm {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated configs keep every tensor below 2^31 elements
  return n;
}

bool is_float_dtype(TensorDType d) { return d == TensorDType::kF32 || d == TensorDType::kF16 || d == TensorDType::kBF16; }

// splitmix64's output function: a bijective 64-bit mixer.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Standard normals for the weight `name`: element e is a pure function of (seed, name, e), drawn
// by Box-Muller from two counter-based uniforms, so no generator state and no library
// distribution (whose algorithm differs between standard libraries) is involved. The double
// results can differ in the last bit between libm implementations, which almost never survives
// the rounding to float.
void fill_normal(uint64_t seed, std::string_view name, float stddev, std::vector<float>& out) {
  const uint64_t key = mix(mix(seed) ^ fnv1a(name));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  constexpr double kInv53 = 1.0 / 9007199254740992.0;  // 2^-53
  for (size_t pair = 0; 2 * pair < out.size(); ++pair) {
    const uint64_t a = mix(key ^ mix(2 * uint64_t(pair)));
    const uint64_t b = mix(key ^ mix(2 * uint64_t(pair) + 1));
    const double u1 = double((a >> 11) + 1) * kInv53;  // (0, 1]: log is finite
    const double u2 = double(b >> 11) * kInv53;        // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[2 * pair] = float(stddev * r * std::cos(kTwoPi * u2));
    if (2 * pair + 1 < out.size()) out[2 * pair + 1] = float(stddev * r * std::sin(kTwoPi * u2));
  }
}

}  // namespace

std::vector<WeightSpec> weight_specs(const ModelConfig& c) {
  const int64_t V = c.vocab, D = c.width, H = c.heads, Dh = c.head_dim(), F = c.ffn_width;
  const bool gains = c.norm == NormKind::kRmsNorm;  // SRMSNorm has no parameters
  const std::vector<LayerKind> kinds =
      c.layer_kinds.size() == c.layers ? c.layer_kinds : detail::default_layer_kinds(c.layers);
  std::vector<WeightSpec> s;
  s.push_back({"embed", {V, D}});
  for (uint32_t i = 0; i < c.layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    if (gains) s.push_back({p + "attn_norm", {D}});
    s.push_back({p + "wq", {H, D, Dh}});
    s.push_back({p + "wk", {H, D, Dh}});
    s.push_back({p + "wv", {H, D, Dh}});
    if (c.has_lrpe(i)) s.push_back({p + "lrpe_theta", {H, Dh}});
    if (gains && kinds[i] == LayerKind::kNorm) s.push_back({p + "out_norm", {D}});
    if (c.output_gate) s.push_back({p + "wgate", {D, D}});
    s.push_back({p + "wo", {D, D}});
    if (gains) s.push_back({p + "ffn_norm", {D}});
    s.push_back({p + "wu", {D, F}});
    s.push_back({p + "wg", {D, F}});
    s.push_back({p + "wd", {F, D}});
  }
  if (gains) s.push_back({"final_norm", {D}});
  if (!c.tie_embeddings) s.push_back({"head", {D, V}});
  return s;
}

struct Weights::Impl {
  ModelConfig config;
  std::vector<WeightSpec> specs;
  std::map<std::string, size_t, std::less<>> index;  // name -> position in specs
  std::optional<SafetensorsFile> file;               // loaded weights, or
  std::vector<std::vector<float>> values;            // random weights, one per spec

  explicit Impl(ModelConfig c) : config(std::move(c)), specs(weight_specs(config)) {
    for (size_t i = 0; i < specs.size(); ++i) index.emplace(specs[i].name, i);
  }

  Result<size_t> find(std::string_view name) const {
    const auto it = index.find(name);
    if (it == index.end()) return not_found("lm weights: no weight '" + std::string(name) + "' in this config");
    return it->second;
  }
};

Weights::Weights(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Weights::Weights(Weights&&) noexcept = default;
Weights& Weights::operator=(Weights&&) noexcept = default;
Weights::~Weights() = default;

namespace {

// Weights rill saved carry their config (Weights::save). Shapes that fit another config are taken,
// as a config edited on purpose (a norm's epsilon, the decay) must be; but a weights file paired
// with the JSON of another save would otherwise run silently as a different model, so say so.
void warn_if_saved_with_another_config(const SafetensorsFile& file, const ModelConfig& config,
                                       const std::string& file_text) {
  const auto saved = file.metadata().find("rill.lm.config");
  if (saved == file.metadata().end()) return;  // not saved by rill (a converted checkpoint)
  auto parsed = config_from_json(saved->second);
  if (!parsed.is_ok()) {
    log_message(MessageSeverity::kWarning, file_text + ": its stored config is unreadable (" +
                                               parsed.status().message() + "); using the given config");
    return;
  }
  const std::string given_text = config_to_json(config), stored_text = config_to_json(*parsed);
  if (given_text == stored_text) return;  // the pair as saved
  const nlohmann::json given = nlohmann::json::parse(given_text);
  const nlohmann::json stored = nlohmann::json::parse(stored_text);
  std::string differ;
  for (const auto& [key, value] : given.items())
    if (!stored.contains(key) || stored.at(key) != value) differ += (differ.empty() ? "" : ", ") + key;
  for (const auto& [key, value] : stored.items())
    if (!given.contains(key)) differ += (differ.empty() ? "" : ", ") + key;
  if (!differ.empty())
    log_message(MessageSeverity::kWarning,
                file_text + " was saved with another config (differing in " + differ + "); using the given one");
}

}  // namespace

Result<Weights> Weights::load(const std::string& config_path, const std::string& weights_path) {
  return rill::detail::host_memory_guarded("lm weights load", [&]() -> Result<Weights> {
    RILL_ASSIGN_OR_RETURN(ModelConfig config, load_config(config_path));
    RILL_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(weights_path));
    return from_file(std::move(config), std::move(file));
  });
}

Result<Weights> Weights::from_file(ModelConfig config, SafetensorsFile file) {
  return rill::detail::host_memory_guarded("lm weights", [&]() -> Result<Weights> {
    const std::string file_text = "lm weights '" + file.label() + "'";
    const std::string where = file_text + ": ";
    RILL_RETURN_IF_ERROR(config.validate().with_context(file_text));
    auto impl = std::make_unique<Impl>(std::move(config));
    for (const WeightSpec& spec : impl->specs) {
      const SafetensorsEntry* e = file.find(spec.name);
      if (!e) return not_found(where + "missing tensor '" + spec.name + "' " + shape_text(spec.shape));
      if (!is_float_dtype(e->dtype))
        return invalid_argument(where + "tensor '" + spec.name + "' is " + std::string(dtype_name(e->dtype)) +
                                "; weights must be F32, F16 or BF16");
      if (e->shape != spec.shape)
        return invalid_argument(where + "tensor '" + spec.name + "' has shape " + shape_text(e->shape) + ", expected " +
                                shape_text(spec.shape));
      RILL_RETURN_IF_ERROR(file.check_finite(*e));
    }
    // An extra tensor usually means the file is for another config (tied head, other layer kinds).
    for (const SafetensorsEntry& e : file.entries())
      if (!impl->index.count(e.name))
        return invalid_argument(where + "unexpected tensor '" + e.name + "': not a weight of this config");
    warn_if_saved_with_another_config(file, impl->config, file_text);
    impl->file.emplace(std::move(file));
    return Weights(std::move(impl));
  });
}

Result<Weights> Weights::random(ModelConfig config, uint64_t seed) {
  return rill::detail::host_memory_guarded("lm weights random", [&]() -> Result<Weights> {
    RILL_RETURN_IF_ERROR(config.validate());
    auto impl = std::make_unique<Impl>(std::move(config));
    // validate() bounds each tensor, not their sum: a config of 256 wide layers is terabytes, which
    // an overcommitting system would hand out page by page until it killed the process.
    uint64_t bytes = 0;
    for (const WeightSpec& spec : impl->specs) bytes += uint64_t(element_count(spec.shape)) * sizeof(float);
    if (const uint64_t host = platform::physical_memory_bytes(); host != 0 && bytes > host)
      return resource_exhausted("lm weights: random weights of " + std::to_string(bytes >> 20) + " MiB exceed this " +
                                "machine's " + std::to_string(host >> 20) + " MiB of memory");
    try {
      impl->values.resize(impl->specs.size());
      for (size_t i = 0; i < impl->specs.size(); ++i) {
        const WeightSpec& spec = impl->specs[i];
        std::vector<float>& v = impl->values[i];
        v.resize(size_t(element_count(spec.shape)));
        if (spec.shape.size() == 1) {  // every rank-1 weight is a norm gain
          std::fill(v.begin(), v.end(), 1.0f);
          continue;
        }
        if (spec.name.ends_with(".lrpe_theta")) {  // the published initial angles: 10000^(-2c / D)
          for (size_t ch = 0; ch < v.size(); ++ch)
            v[ch] = float(std::pow(10000.0, -2.0 * double(ch) / double(v.size())));
          continue;
        }
        // Unit-variance outputs for unit-variance inputs: 1 / fan_in, the `in` dimension [.., in, out].
        const float stddev =
            spec.name == "embed" ? 1.0f : float(1.0 / std::sqrt(double(spec.shape[spec.shape.size() - 2])));
        fill_normal(seed, spec.name, stddev, v);
      }
    } catch (const std::bad_alloc&) {
      return resource_exhausted("lm weights: out of host memory for random weights");
    }
    return Weights(std::move(impl));
  });
}

const ModelConfig& Weights::config() const { return impl_->config; }

Result<std::vector<float>> Weights::floats(std::string_view name) const {
  RILL_ASSIGN_OR_RETURN(size_t i, impl_->find(name));
  if (impl_->file) return impl_->file->read_floats(name, impl_->specs[i].shape);
  return impl_->values[i];
}

Result<TensorDType> Weights::dtype(std::string_view name) const {
  RILL_RETURN_IF_ERROR(impl_->find(name).status());
  if (impl_->file) return impl_->file->find(name)->dtype;
  return TensorDType::kF32;
}

Result<std::span<const uint8_t>> Weights::bytes(std::string_view name) const {
  RILL_ASSIGN_OR_RETURN(size_t i, impl_->find(name));
  if (impl_->file) return impl_->file->bytes(*impl_->file->find(name));
  const std::vector<float>& v = impl_->values[i];
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float));
}

Status Weights::save(const std::string& config_path, const std::string& weights_path, TensorDType dtype) const {
  return rill::detail::host_memory_guarded("lm weights save", [&]() -> Status {
    if (!is_float_dtype(dtype))
      return invalid_argument("lm weights: cannot save as " + std::string(dtype_name(dtype)) + " (F32, F16 or BF16)");
    if (config_path.empty() || weights_path.empty())
      return invalid_argument("lm weights save: the config and the weights each need a path");
    // The config is written second: over the same file it would replace the weights just written.
    if (same_file(config_path, weights_path))
      return invalid_argument("lm weights save: the config path '" + config_path + "' and the weights path '" +
                              weights_path + "' name the same file");
    // A pair whose config load_config would refuse could not be loaded again: nothing is written.
    const std::string config_json = config_to_json(impl_->config);
    if (config_json.size() + 1 > detail::kMaxConfigFileBytes)
      return out_of_range("lm weights save: the config's JSON takes " + std::to_string(config_json.size() + 1) +
                          " bytes, past the " + std::to_string(detail::kMaxConfigFileBytes) +
                          " a config file may hold");
    SafetensorsWriter w;
    for (const WeightSpec& spec : impl_->specs) {
      RILL_ASSIGN_OR_RETURN(TensorDType stored, this->dtype(spec.name));
      // LRPE angles multiply positions up to 2^32: rounded to 16 bits, their error grows with the
      // position (radians off after a few thousand tokens). They stay as stored, f32 when saved from f32.
      const TensorDType to = spec.name.ends_with(".lrpe_theta") && stored == TensorDType::kF32 ? stored : dtype;
      if (stored == to) {  // copy the stored bits: no round trip through float
        RILL_ASSIGN_OR_RETURN(std::span<const uint8_t> raw, bytes(spec.name));
        RILL_RETURN_IF_ERROR(w.add(spec.name, to, spec.shape, raw));
        continue;
      }
      RILL_ASSIGN_OR_RETURN(std::vector<float> f, floats(spec.name));
      if (to == TensorDType::kF32) {
        RILL_RETURN_IF_ERROR(w.add_floats(spec.name, spec.shape, f));
        continue;
      }
      std::vector<uint8_t> raw(f.size() * 2);  // little-endian 16-bit values
      for (size_t j = 0; j < f.size(); ++j) {
        const uint16_t h = dtype == TensorDType::kF16 ? float_to_half(f[j]) : float_to_bf16(f[j]);
        // A value that rounds to an infinity would make a file load() refuses as not finite.
        if ((h & 0x7fffu) == (dtype == TensorDType::kF16 ? 0x7c00u : 0x7f80u))
          return out_of_range("lm weights save: '" + spec.name + "' holds " + std::to_string(f[j]) + " at flat index " +
                              std::to_string(j) + ", past " + (dtype == TensorDType::kF16 ? "f16" : "bf16") +
                              "'s range: save in " + (dtype == TensorDType::kF16 ? "f32 or bf16" : "f32"));
        raw[2 * j] = uint8_t(h & 0xffu);
        raw[2 * j + 1] = uint8_t(h >> 8);
      }
      RILL_RETURN_IF_ERROR(w.add(spec.name, dtype, spec.shape, raw));
    }
    // The config travels in the weights too, so a file separated from its JSON can be identified.
    RILL_RETURN_IF_ERROR(w.set_metadata("rill.lm.config", config_json));
    const std::string text = config_json + "\n";  // before the first write: it may run out of memory
    RILL_RETURN_IF_ERROR(w.write(weights_path));
    return write_file_atomic(config_path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  });
}

namespace detail {

Result<std::string> weights_fingerprint(const Weights& w) {
  constexpr uint64_t kWhole = 1024, kSamples = 64;  // elements
  Fnv1a h;
  for (const WeightSpec& spec : weight_specs(w.config())) {
    RILL_ASSIGN_OR_RETURN(const TensorDType dtype, w.dtype(spec.name));
    RILL_ASSIGN_OR_RETURN(const std::span<const uint8_t> bytes, w.bytes(spec.name));
    const size_t es = dtype_size(dtype);
    const uint64_t n = bytes.size() / es;
    h.add(spec.name).add_u64(uint64_t(dtype)).add_u64(n);
    if (n <= kWhole) {
      h.add(bytes);
      continue;
    }
    for (uint64_t i = 0; i < kSamples; ++i) h.add(bytes.subspan(size_t(i * (n - 1) / (kSamples - 1) * es), es));
  }
  return h.hex();
}

}  // namespace detail

}  // namespace rill::lm
