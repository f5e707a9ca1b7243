#include "icl/model_state.hpp"

#include <bit>
#include <cmath>
#include <span>
#include <string>
#include <type_traits>

namespace rill::icl::detail {
namespace {

static_assert(sizeof(gpu::IclModelEntry) == gpu::kIclModelEntryWords * 4, "an entry is its words, as in std430");

// Models in one cohort: far more than a grid needs, and every buffer index stays far below 2^32.
constexpr size_t kMaxCohort = 4096;

// Seeded N(0, std^2) initial parameters: splitmix64 uniforms, Box-Muller in double.
std::vector<float> initial_parameters(uint64_t seed, size_t count, float std_dev) {
  uint64_t s = seed ^ 0x1C1D5EEDull;
  auto next = [&s]() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto uniform = [&next]() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; };
  std::vector<float> out(count);
  for (size_t i = 0; i < count; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), theta = 6.283185307179586 * uniform();
    out[i] = float(std_dev * r * std::cos(theta));
    if (i + 1 < count) out[i + 1] = float(std_dev * r * std::sin(theta));
  }
  return out;
}

// Uploads plain values (state words, model-table entries) as their bytes.
template <typename T>
Status upload_values(Context& ctx, const Tensor& t, std::span<const T> values) {
  static_assert(std::is_trivially_copyable_v<T>);
  return ctx.upload(t, {reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()});
}

}  // namespace

Shape Shape::of(const TrainConfig& c) {
  Shape s;
  s.d = uint32_t(c.task.d);
  s.n = uint32_t(c.task.n);
  s.layers = uint32_t(c.model.layers);
  s.heads = uint32_t(c.model.heads);
  s.width = s.d + 1;
  s.tokens = s.n + 1;
  s.token_elems = s.tokens * s.width;
  s.params = uint32_t(parameter_count(c.model, c.task.d));
  return s;
}

gpu::IclModelEntry model_entry(const TrainConfig& c) {
  gpu::IclModelEntry e{};
  e.seed_lo = uint32_t(c.seed);
  e.seed_hi = uint32_t(c.seed >> 32);
  e.noise_kind = uint32_t(c.task.noise);
  e.category_count = uint32_t(c.task.categories.size());
  e.sigma_max = c.task.sigma_max;
  for (size_t i = 0; i < c.task.categories.size() && i < gpu::kIclMaxCategories; ++i)
    e.categories[i] = c.task.categories[i];
  const OptimizerConfig& o = c.optimizer;
  e.stop_on_nonfinite = c.on_nonfinite == NonFinitePolicy::kStop ? 1u : 0u;
  e.lr = o.lr;
  e.beta1 = o.kind == OptimizerKind::kSgd ? o.momentum : o.beta1;
  e.beta2 = o.beta2;
  e.eps = o.eps;
  e.clip_norm = o.clip_norm;
  return e;
}

gpu::IclModelEntry sampling_entry(const TrainConfig& c, uint64_t seed, std::optional<float> fixed_sigma) {
  gpu::IclModelEntry e = model_entry(c);
  e.seed_lo = uint32_t(seed);
  e.seed_hi = uint32_t(seed >> 32);
  if (fixed_sigma) {  // one noise level: a one-value categorical draw
    e.noise_kind = *fixed_sigma > 0.0f ? uint32_t(NoiseKind::kCategorical) : uint32_t(NoiseKind::kNone);
    e.category_count = 1;
    e.categories[0] = *fixed_sigma;
  }
  return e;
}

Result<Tensor> entry_table(Context& ctx, const gpu::IclModelEntry& entry) {
  RILL_ASSIGN_OR_RETURN(Tensor t, ctx.tensor(DType::kU32, {int64_t(gpu::kIclModelEntryWords)}, "icl.sampling_entry"));
  RILL_RETURN_IF_ERROR(upload_values<gpu::IclModelEntry>(ctx, t, {&entry, 1}));
  return t;
}

Result<ModelState> ModelState::create(Context& ctx, const Shape& s, std::span<const TrainConfig> configs) {
  if (configs.empty()) return invalid_argument("icl: no models to train");
  if (configs.size() > kMaxCohort)
    return invalid_argument("icl: " + std::to_string(configs.size()) + " models in one cohort; at most " +
                            std::to_string(kMaxCohort));
  ModelState m;
  m.models = uint32_t(configs.size());
  m.history_capacity = uint32_t(configs.front().read_every);
  const int64_t models = m.models, params = int64_t(s.params) * models;
  RILL_ASSIGN_OR_RETURN(m.params, ctx.tensor(DType::kF32, {params}, "icl.params", MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(m.moment1, ctx.tensor(DType::kF32, {params}, "icl.moment1", MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(m.moment2, ctx.tensor(DType::kF32, {params}, "icl.moment2", MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(m.state, ctx.tensor(DType::kU32, {gpu::kIclStateWords * models}, "icl.state"));
  RILL_ASSIGN_OR_RETURN(m.history, ctx.tensor(DType::kF32, {int64_t(m.history_capacity) * 2 * models}, "icl.history"));
  RILL_ASSIGN_OR_RETURN(m.entries, ctx.tensor(DType::kU32, {gpu::kIclModelEntryWords * models}, "icl.models"));
  std::vector<gpu::IclModelEntry> entries;
  for (const TrainConfig& c : configs) entries.push_back(model_entry(c));
  RILL_RETURN_IF_ERROR(upload_values<gpu::IclModelEntry>(ctx, m.entries, entries));

  std::vector<float> params_init;
  params_init.reserve(size_t(params));
  for (const TrainConfig& c : configs) {
    const std::vector<float> p = initial_parameters(c.seed, s.params, c.model.init_std);
    params_init.insert(params_init.end(), p.begin(), p.end());
  }
  RILL_RETURN_IF_ERROR(ctx.upload_floats(m.params, params_init));
  const std::vector<float> zeros(size_t(params), 0.0f);
  RILL_RETURN_IF_ERROR(ctx.upload_floats(m.moment1, zeros));
  RILL_RETURN_IF_ERROR(ctx.upload_floats(m.moment2, zeros));
  RILL_RETURN_IF_ERROR(ctx.upload_floats(m.history, std::vector<float>(size_t(m.history_capacity) * 2 * models, 0.0f)));
  std::vector<uint32_t> state(size_t(gpu::kIclStateWords) * models, 0);
  for (int64_t i = 0; i < models; ++i) {
    uint32_t* w = state.data() + i * gpu::kIclStateWords;
    w[gpu::kIclStateBeta1Power] = w[gpu::kIclStateBeta2Power] = std::bit_cast<uint32_t>(1.0f);
  }
  RILL_RETURN_IF_ERROR(upload_values<uint32_t>(ctx, m.state, state));
  m.shape_params = s.params;
  return m;
}

Result<Checkpoint> ModelState::snapshot(Context& ctx, uint32_t model, const TrainConfig& config) const {
  if (model >= models) return out_of_range("icl: model " + std::to_string(model) + " of " + std::to_string(models));
  Checkpoint c;
  c.config = config;
  auto slice = [&](const Tensor& t) -> Result<std::vector<float>> {
    RILL_ASSIGN_OR_RETURN(std::vector<float> all, ctx.download_floats(t));
    const auto first = all.begin() + ptrdiff_t(model) * shape_params;
    return std::vector<float>(first, first + shape_params);
  };
  RILL_ASSIGN_OR_RETURN(c.params, slice(params));
  RILL_ASSIGN_OR_RETURN(c.moment1, slice(moment1));
  RILL_ASSIGN_OR_RETURN(c.moment2, slice(moment2));
  RILL_ASSIGN_OR_RETURN(std::vector<uint32_t> words, all_state_words(ctx));
  const auto first = words.begin() + ptrdiff_t(model) * gpu::kIclStateWords;
  c.state.assign(first, first + gpu::kIclStateWords);
  return c;
}

Status ModelState::restore(Context& ctx, uint32_t model, const Checkpoint& c) const {
  if (model >= models) return out_of_range("icl: model " + std::to_string(model) + " of " + std::to_string(models));
  if (c.params.size() != shape_params || c.moment1.size() != shape_params || c.moment2.size() != shape_params ||
      c.state.size() != gpu::kIclStateWords)
    return invalid_argument("icl: the checkpoint's tensors do not fit the model");
  // Everything is read before anything is written, and an upload that fails part way puts back
  // what it replaced: a grid's model is never left with new parameters beside old moments.
  const Tensor* tensors[3] = {&params, &moment1, &moment2};
  const std::vector<float>* values[3] = {&c.params, &c.moment1, &c.moment2};
  std::vector<float> before[3], after[3];
  for (int i = 0; i < 3; ++i) {
    RILL_ASSIGN_OR_RETURN(before[i], ctx.download_floats(*tensors[i]));
    after[i] = before[i];
    std::copy(values[i]->begin(), values[i]->end(), after[i].begin() + ptrdiff_t(model) * shape_params);
  }
  RILL_ASSIGN_OR_RETURN(const std::vector<uint32_t> words_before, all_state_words(ctx));
  std::vector<uint32_t> words = words_before;
  std::copy(c.state.begin(), c.state.end(), words.begin() + ptrdiff_t(model) * gpu::kIclStateWords);
  int uploaded = 0;
  Status failed = Status::ok();
  for (; uploaded < 3 && failed.is_ok(); ++uploaded) failed = ctx.upload_floats(*tensors[uploaded], after[uploaded]);
  if (failed.is_ok()) failed = upload_values<uint32_t>(ctx, state, words);
  if (failed.is_ok()) return Status::ok();
  Status undone = Status::ok();
  for (int i = 0; i < uploaded && undone.is_ok(); ++i) undone = ctx.upload_floats(*tensors[i], before[i]);
  if (undone.is_ok()) undone = upload_values<uint32_t>(ctx, state, words_before);
  return failed.with_context(undone.is_ok() ? "icl: restoring model " + std::to_string(model) + " (left as it was)"
                                            : "icl: restoring model " + std::to_string(model) +
                                                  " failed part way, and so did putting it back (" + undone.message() +
                                                  "): its state is mixed; load a checkpoint into it again");
}

ModelProgress read_progress(std::span<const uint32_t> words, std::span<const float> ring, int64_t from,
                            std::vector<StepRecord>& records) {
  const bool halted = words[gpu::kIclStateHalted] != 0;
  const int64_t end = halted ? int64_t(words[gpu::kIclStateHaltedStep]) + 1 : int64_t(words[gpu::kIclStateStep]);
  const size_t capacity = ring.size() / 2;
  for (int64_t s = from; capacity > 0 && s < end; ++s) {
    const size_t slot = size_t(s) % capacity;
    records.push_back({s, ring[2 * slot], ring[2 * slot + 1]});
  }
  ModelProgress p{int64_t(words[gpu::kIclStateStep]), int64_t(words[gpu::kIclStateSkipped]), Status::ok()};
  if (halted) {
    const uint32_t bits = words[gpu::kIclStateNonFinite];
    const char* what = bits == 3   ? "the loss and the gradient are not finite"
                       : bits == 1 ? "the loss is not finite"
                       : bits == 2 ? "the gradient is not finite"
                                   : "the update would take parameters past f32 (the learning rate is too large)";
    p.halted = failed_precondition("icl training stopped at step " + std::to_string(words[gpu::kIclStateHaltedStep]) +
                                   ": " + what +
                                   " (parameters keep the values of the step before; "
                                   "lower the learning rate or use the skip-batch policy)");
  }
  return p;
}

Result<std::vector<uint32_t>> ModelState::all_state_words(Context& ctx) const {
  std::vector<uint32_t> words(size_t(gpu::kIclStateWords) * models);
  RILL_RETURN_IF_ERROR(ctx.download(state, {reinterpret_cast<uint8_t*>(words.data()), words.size() * 4}));
  return words;
}

}  // namespace rill::icl::detail
