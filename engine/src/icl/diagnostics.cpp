// Ahn et al.'s optimisation diagnostics, measured with the trainer's own GPU forward/backward:
// stochastic gradient noise and its tails, the Hessian diagonal by central differences of the
// gradient, and the smoothness along the gradient. Parameters are restored afterwards.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/host_memory_guard.hpp"
#include "icl/trainer_impl.hpp"
#include "rill/icl.hpp"

namespace rill::icl {
namespace {

double norm(const std::vector<double>& v) { return std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0)); }

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(std::clamp(q * double(v.size() - 1), 0.0, double(v.size() - 1)))];
}

// Hill estimator of the tail index from the largest k of the (positive) samples.
double hill_tail_index(std::vector<double> x, size_t k) {
  std::sort(x.begin(), x.end(), std::greater<>());
  k = std::clamp<size_t>(k, 1, x.size() - 1);
  double s = 0.0;
  for (size_t i = 0; i < k; ++i) s += std::log(x[i] / x[k]);
  return s > 0.0 ? double(k) / s : INFINITY;
}

// The diagnostics around theta, the trainer's parameters, which the probes move (diagnose puts them
// back).
Result<Diagnostics> diagnose_around(Trainer& trainer, const DiagnosticsOptions& o, const std::vector<float>& theta) {
  const size_t p = theta.size();
  RILL_ASSIGN_OR_RETURN(TaskSet reference, trainer.sample_task_set(o.reference_tasks, o.seed));
  auto gradient_at = [&](const std::vector<float>& params) -> Result<Trainer::TaskSetRun> {
    RILL_RETURN_IF_ERROR(trainer.set_parameters(params));
    return detail::model_run_on(trainer, reference);  // no baselines: unused here
  };

  Diagnostics d;
  d.parameters = int64_t(p);
  RILL_ASSIGN_OR_RETURN(Trainer::TaskSetRun full, gradient_at(theta));
  const std::vector<double> g(full.gradient.begin(), full.gradient.end());
  d.full_loss = full.loss;
  d.full_grad_norm = norm(g);

  // Stochastic gradient noise over fresh training-distribution batches (steps far past training).
  std::vector<std::vector<double>> noise;
  for (int b = 0; b < o.batches; ++b) {
    // Sampled from the config's distribution, as the reference tasks are, also for a model trained on a set.
    RILL_ASSIGN_OR_RETURN(Trainer::Probe probe, detail::probe_batch(trainer, uint32_t(1) << 30 | uint32_t(b)));
    std::vector<double> n(p);
    for (size_t i = 0; i < p; ++i) n[i] = double(probe.gradient[i]) - g[i];
    noise.push_back(std::move(n));
  }
  std::vector<double> norms;
  for (const auto& n : noise) norms.push_back(norm(n));
  d.noise_norm_mean = std::accumulate(norms.begin(), norms.end(), 0.0) / double(norms.size());
  double m4 = 0.0, count = 0.0;
  for (size_t i = 0; i < p; ++i) {
    double mean = 0.0, var = 0.0;
    for (const auto& n : noise) mean += n[i];
    mean /= double(noise.size());
    for (const auto& n : noise) var += (n[i] - mean) * (n[i] - mean);
    var /= double(noise.size());
    if (var <= 0.0) continue;
    for (const auto& n : noise) m4 += std::pow((n[i] - mean) / std::sqrt(var), 4.0), count += 1.0;
  }
  d.noise_kurtosis = count > 0 ? m4 / count : NAN;
  d.noise_tail_index = hill_tail_index(norms, std::max<size_t>(2, norms.size() / 10));

  // Hessian diagonal: H_ii = (g_i(theta + h e_i) - g_i(theta - h e_i)) / 2h.
  d.hessian_diagonal.resize(p);
  std::vector<float> shifted = theta;
  for (size_t i = 0; i < p; ++i) {
    const double h = o.step * std::max(1.0, std::fabs(double(theta[i])));
    shifted[i] = float(theta[i] + h);
    const double hp = double(shifted[i]) - theta[i];  // the step the float could represent
    RILL_ASSIGN_OR_RETURN(Trainer::TaskSetRun plus, gradient_at(shifted));
    shifted[i] = float(theta[i] - h);
    const double hm = theta[i] - double(shifted[i]);
    RILL_ASSIGN_OR_RETURN(Trainer::TaskSetRun minus, gradient_at(shifted));
    shifted[i] = theta[i];
    d.hessian_diagonal[i] = (double(plus.gradient[i]) - minus.gradient[i]) / (hp + hm);
  }
  std::vector<double> abs_diag(p);
  for (size_t i = 0; i < p; ++i) abs_diag[i] = std::fabs(d.hessian_diagonal[i]);
  const double median = quantile(abs_diag, 0.5);
  d.robust_condition_number = median > 0 ? quantile(abs_diag, 0.99) / median : INFINITY;

  // Smoothness along u = g / |g|: u^T H u = (g(theta + h u) - g(theta - h u)) . u / 2h.
  if (d.full_grad_norm > 0) {
    const double h = o.step * std::max(1.0, norm(std::vector<double>(theta.begin(), theta.end())) / std::sqrt(double(p)));
    std::vector<float> plus_p(p), minus_p(p);
    for (size_t i = 0; i < p; ++i) {
      plus_p[i] = float(theta[i] + h * g[i] / d.full_grad_norm);
      minus_p[i] = float(theta[i] - h * g[i] / d.full_grad_norm);
    }
    RILL_ASSIGN_OR_RETURN(Trainer::TaskSetRun plus, gradient_at(plus_p));
    RILL_ASSIGN_OR_RETURN(Trainer::TaskSetRun minus, gradient_at(minus_p));
    double s = 0.0;
    for (size_t i = 0; i < p; ++i) s += (double(plus.gradient[i]) - minus.gradient[i]) * g[i] / d.full_grad_norm;
    d.directional_smoothness = s / (2 * h);
  }
  return d;
}

}  // namespace

Result<Diagnostics> diagnose(Trainer& trainer, const DiagnosticsOptions& o) {
  // A step below 2^-20 of a parameter moves few float ulps (2^-23 each) or none: the differences
  // were noise or 0/0.
  if (o.batches < 4 || o.reference_tasks < 1 || !(o.step >= 0x1p-20 && o.step <= 1.0))
    return invalid_argument("icl diagnose: needs batches >= 4, reference_tasks >= 1 and a step in [2^-20, 1]");
  RILL_ASSIGN_OR_RETURN(std::vector<float> theta, trainer.parameters());
  Result<Diagnostics> d =
      rill::detail::host_memory_guarded("icl diagnose", [&] { return diagnose_around(trainer, o, theta); });
  // On every path, an error's too: training or a checkpoint after a failed diagnosis must not go on
  // from a probe's shifted parameters.
  RILL_RETURN_IF_ERROR(trainer.set_parameters(theta));
  return d;
}

}  // namespace rill::icl
