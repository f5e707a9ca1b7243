// ICL configurations: the papers' presets, validation with messages that name the field, and
// parameter counts.
#include <cfloat>
#include <cmath>

#include "icl/sigma_rule.hpp"
#include "rill/icl.hpp"
#include "vk/kernel_contracts.hpp"

namespace rill::icl {

TrainConfig ahn_setting(AhnSetting setting) {
  TrainConfig c;
  c.task.d = 5;
  c.task.n = setting == AhnSetting::k2 ? 5 : 20;
  c.task.data = setting == AhnSetting::k3 ? DataKind::kHeavyTailed : DataKind::kGaussian;
  c.model = {.layers = 3, .heads = 1, .param = Parameterization::kFull, .convention = Convention::kAhn, .init_std = 0.05f};
  // lr 1e-2: the best of {1e-3, 3e-3, 1e-2} for both optimizers over 1000 steps of setting 1.
  c.optimizer = {.kind = OptimizerKind::kAdam, .lr = 1e-2f, .momentum = 0.9f, .beta1 = 0.9f, .beta2 = 0.9f,
                 .eps = 1e-8f, .clip_norm = 1.0f};
  c.batch = 1000;
  return c;
}

TrainConfig vladymyrov_setting(Parameterization param, float sigma_max) {
  TrainConfig c;
  c.task.d = 10;
  c.task.n = 20;
  c.task.noise = sigma_max > 0.0f ? NoiseKind::kUniform : NoiseKind::kNone;
  c.task.sigma_max = sigma_max;
  // Without the 1/n scale each layer is cubic in the tokens: N(0, 0.05^2) parameters start some
  // tasks at losses of 1e18 (a mean of 1e15 over 2048 tasks); 0.01 starts near E[y^2] = d.
  c.model = {.layers = 3, .heads = 1, .param = param, .convention = Convention::kVladymyrov, .init_std = 0.01f};
  c.optimizer = {.kind = OptimizerKind::kAdam, .lr = 1e-4f, .momentum = 0.9f, .beta1 = 0.9f, .beta2 = 0.999f,
                 .eps = 1e-8f, .clip_norm = 0.0f};
  c.batch = 2048;
  return c;
}

int64_t parameter_count(const ModelConfig& model, int d) {
  const int64_t w = int64_t(d) + 1;
  const int64_t block = model.param == Parameterization::kFull ? 2 * w * w : model.param == Parameterization::kDiag ? 4 : 3;
  return int64_t(model.layers) * model.heads * block;
}

namespace {

bool positive_finite(float x) { return std::isfinite(x) && x > 0.0f; }

Status field(bool ok, const std::string& what) {
  return ok ? Status::ok() : invalid_argument("icl config: " + what);
}

}  // namespace

Status validate(const TrainConfig& c) {
  const TaskConfig& t = c.task;
  RILL_RETURN_IF_ERROR(field(t.d >= 1 && t.d <= 1024, "d must be in [1, 1024], got " + std::to_string(t.d)));
  RILL_RETURN_IF_ERROR(field(t.n >= 1 && t.n <= 65536, "n must be in [1, 65536], got " + std::to_string(t.n)));
  // Every number is written into checkpoints, those the data and noise do not use too: finite
  // always, or a saved run could not be read back (JSON has no NaN or Inf).
  RILL_RETURN_IF_ERROR(field(std::isfinite(t.gamma_shape) && std::isfinite(t.gamma_scale) && std::isfinite(t.sigma_max),
                             "gamma_shape, gamma_scale and sigma_max must be finite, also where unused"));
  for (float s : t.categories) RILL_RETURN_IF_ERROR(field(std::isfinite(s), "sigma values must be finite"));
  // Bounded where unused too: a checkpoint's header holds them, and one past its reader's cap could
  // be written over a good checkpoint and never read back.
  RILL_RETURN_IF_ERROR(field(t.categories.size() <= gpu::kIclMaxCategories,
                             "at most " + std::to_string(gpu::kIclMaxCategories) + " sigma values, got " +
                                 std::to_string(t.categories.size()) + " (also where the noise is not categorical)"));
  if (t.data == DataKind::kHeavyTailed) {
    RILL_RETURN_IF_ERROR(field(positive_finite(t.gamma_shape) && t.gamma_shape >= 0.01f,
                               "gamma_shape must be finite and >= 0.01"));
    // Normal, not denormal: a GPU that flushes denormal operands would draw other tokens than the CPU.
    RILL_RETURN_IF_ERROR(field(positive_finite(t.gamma_scale) && t.gamma_scale >= FLT_MIN,
                               "gamma_scale must be finite and at least 2^-126 (not denormal)"));
  }
  if (t.noise == NoiseKind::kUniform)
    RILL_RETURN_IF_ERROR(
        field(detail::sigma_allowed(t.sigma_max), std::string("sigma_max must be ") + detail::kSigmaRule));
  if (t.noise == NoiseKind::kCategorical) {
    RILL_RETURN_IF_ERROR(field(!t.categories.empty(), "categorical noise needs 1 to " +
                                                          std::to_string(gpu::kIclMaxCategories) + " sigma values"));
    for (float s : t.categories)
      RILL_RETURN_IF_ERROR(field(detail::sigma_allowed(s), std::string("sigma values must be ") + detail::kSigmaRule));
  }
  const ModelConfig& m = c.model;
  RILL_RETURN_IF_ERROR(field(m.layers >= 1 && m.layers <= 64, "layers must be in [1, 64], got " + std::to_string(m.layers)));
  RILL_RETURN_IF_ERROR(field(m.heads >= 1 && m.heads <= 64, "heads must be in [1, 64], got " + std::to_string(m.heads)));
  RILL_RETURN_IF_ERROR(field(std::isfinite(m.init_std) && m.init_std >= 0.0f, "init_std must be finite and >= 0"));
  // The kernels index parameters in 32 bits (the largest model the other limits allow has 8.6e9).
  const int64_t params = parameter_count(m, t.d);
  RILL_RETURN_IF_ERROR(field(params <= (int64_t(1) << 30), "the model has " + std::to_string(params) +
                                                               " parameters; at most 2^30 (fewer layers, heads or d)"));
  // C++ callers can cast any int to these: an unknown value would run as another setting, and its
  // checkpoints could not be read back.
  RILL_RETURN_IF_ERROR(field(unsigned(m.param) <= unsigned(Parameterization::kGdPlusPlus), "unknown parameterization"));
  RILL_RETURN_IF_ERROR(field(unsigned(m.convention) <= unsigned(Convention::kVladymyrov), "unknown convention"));
  RILL_RETURN_IF_ERROR(field(unsigned(t.data) <= unsigned(DataKind::kHeavyTailed), "unknown data kind"));
  RILL_RETURN_IF_ERROR(field(unsigned(t.noise) <= unsigned(NoiseKind::kCategorical), "unknown noise kind"));
  RILL_RETURN_IF_ERROR(
      field(unsigned(c.on_nonfinite) <= unsigned(NonFinitePolicy::kSkipBatch), "unknown non-finite policy"));
  const OptimizerConfig& o = c.optimizer;
  RILL_RETURN_IF_ERROR(field(o.kind == OptimizerKind::kSgd || o.kind == OptimizerKind::kAdam, "unknown optimizer"));
  RILL_RETURN_IF_ERROR(field(positive_finite(o.lr), "learning rate must be finite and > 0"));
  RILL_RETURN_IF_ERROR(field(std::isfinite(o.momentum) && o.momentum >= 0.0f && o.momentum < 1.0f, "momentum must be in [0, 1)"));
  RILL_RETURN_IF_ERROR(field(std::isfinite(o.beta1) && o.beta1 >= 0.0f && o.beta1 < 1.0f, "beta1 must be in [0, 1)"));
  RILL_RETURN_IF_ERROR(field(std::isfinite(o.beta2) && o.beta2 >= 0.0f && o.beta2 < 1.0f, "beta2 must be in [0, 1)"));
  // Normal, not denormal: a GPU that flushes it to 0 would divide 0 by 0 where a gradient is 0.
  RILL_RETURN_IF_ERROR(
      field(positive_finite(o.eps) && o.eps >= FLT_MIN, "eps must be finite and at least 2^-126 (not denormal)"));
  RILL_RETURN_IF_ERROR(field(std::isfinite(o.clip_norm), "clip_norm must be finite (<= 0 disables clipping)"));
  RILL_RETURN_IF_ERROR(field(c.batch >= 1, "batch must be >= 1"));
  RILL_RETURN_IF_ERROR(field(c.read_every >= 1 && c.read_every <= 1000000, "read_every must be in [1, 10^6]"));
  return Status::ok();
}

std::string_view name(Parameterization p) {
  switch (p) {
    case Parameterization::kFull: return "full";
    case Parameterization::kDiag: return "diag";
    case Parameterization::kGdPlusPlus: return "gd++";
  }
  return "?";
}

std::string_view name(OptimizerKind o) { return o == OptimizerKind::kSgd ? "sgd" : "adam"; }

Result<Parameterization> parse_parameterization(std::string_view s) {
  if (s == "full") return Parameterization::kFull;
  if (s == "diag") return Parameterization::kDiag;
  if (s == "gd++" || s == "gdpp") return Parameterization::kGdPlusPlus;
  return invalid_argument("unknown parameterization '" + std::string(s) + "' (full, diag, gd++)");
}

Result<OptimizerKind> parse_optimizer(std::string_view s) {
  if (s == "sgd") return OptimizerKind::kSgd;
  if (s == "adam") return OptimizerKind::kAdam;
  return invalid_argument("unknown optimizer '" + std::string(s) + "' (sgd, adam)");
}

}  // namespace rill::icl
