// On-device training of in-context-learning (ICL) regressors: linear transformers trained on
// random linear-regression tasks that the GPU generates itself, as in Ahn et al. (arXiv 2310.01082)
// and Vladymyrov et al. (arXiv 2402.14180).
//
//   auto ctx = rill::Context::create().value();
//   auto trainer = rill::icl::Trainer::create(ctx, rill::icl::ahn_setting(rill::icl::AhnSetting::k1)).value();
//   auto curve = trainer.train(1000).value();     // one recorded step, replayed; reads every K steps
//   auto eval = trainer.evaluate({}).value();     // model vs ridge baselines on fresh tasks
//
// The model (engine/ref/icl.hpp is its executable specification): tokens e_i = (x_i, y_i) for the
// n context examples and (x_q, 0) for the query; each layer computes A = sum_{j<n} e_j e_j^T and
// updates every token e_i += s * sum_h P_h A Q_h e_i; the prediction is minus the query's label
// slot after the last layer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/context.hpp"
#include "rill/export.hpp"
#include "rill/status.hpp"

namespace rill::icl {

// FULL: P, Q free (d+1)x(d+1) per head and layer. DIAG: P = diag(p_x I, p_y), Q = diag(q_x I, q_y).
// GD++: DIAG with q_y = 0.
enum class Parameterization { kFull, kDiag, kGdPlusPlus };
// kAhn: s = 1/n, loss = mean (pred - y)^2. kVladymyrov: s = 1, loss = 1/2 mean (pred - y)^2.
enum class Convention { kAhn, kVladymyrov };
// kGaussian: x ~ N(0, I). kHeavyTailed: x = sqrt(r2) u, u uniform on the sphere, r2 ~ Gamma per token.
enum class DataKind { kGaussian, kHeavyTailed };
// Per-task label noise sigma: none, ~ U(0, sigma_max), or uniform over a set of values.
enum class NoiseKind { kNone, kUniform, kCategorical };
enum class OptimizerKind { kSgd, kAdam };
// What training does when the loss or gradient of a step is not finite: halt (parameters keep
// the last finite values; train() returns the error naming the step) or skip that batch.
enum class NonFinitePolicy { kStop, kSkipBatch };

struct TaskConfig {
  int d = 5;   // features
  int n = 20;  // context examples per task
  DataKind data = DataKind::kGaussian;
  float gamma_shape = 0.1f;  // heavy-tailed r2 ~ Gamma(shape, scale)
  float gamma_scale = 10.0f;
  NoiseKind noise = NoiseKind::kNone;
  float sigma_max = 0.0f;          // kUniform
  std::vector<float> categories;   // kCategorical: 1 to 6 values
};

struct ModelConfig {
  int layers = 3;
  int heads = 1;
  Parameterization param = Parameterization::kFull;
  Convention convention = Convention::kAhn;
  float init_std = 0.05f;  // every parameter ~ N(0, init_std^2) at initialisation
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float lr = 1e-3f;
  float momentum = 0.9f;  // SGD
  float beta1 = 0.9f;     // Adam
  float beta2 = 0.9f;
  float eps = 1e-8f;
  float clip_norm = 1.0f;  // global gradient-norm clipping; <= 0 disables
};

struct TrainConfig {
  TaskConfig task;
  ModelConfig model;
  OptimizerConfig optimizer;
  int batch = 1000;           // fresh tasks per step
  uint64_t seed = 1;          // parameters and every training batch derive from it
  int read_every = 50;        // K: the host reads losses every K steps (nothing per step)
  NonFinitePolicy on_nonfinite = NonFinitePolicy::kStop;
};

// The papers' settings. Ahn et al.: setting 1 (d=5, n=20, Gaussian), 2 (n=5), 3 (heavy-tailed
// Gamma(0.1, 10) radii); L=3, batch 1000, FULL, Adam(0.9, 0.9) with clipping at 1. An enum, not an
// int: a number that names no setting does not compile (an int's 4 gave setting 1 silently).
enum class AhnSetting : int { k1 = 1, k2 = 2, k3 = 3 };
RILL_API TrainConfig ahn_setting(AhnSetting setting);
// Vladymyrov et al.: d=10, n=20, L=3, noise sigma ~ U(0, sigma_max), Adam lr 1e-4, batch 2048.
RILL_API TrainConfig vladymyrov_setting(Parameterization param, float sigma_max);

// Checks a configuration (InvalidArgument naming the field otherwise); device limits are
// checked by Trainer::create.
RILL_API Status validate(const TrainConfig& config);
RILL_API int64_t parameter_count(const ModelConfig& model, int d);

RILL_API std::string_view name(Parameterization p);
RILL_API std::string_view name(OptimizerKind o);
RILL_API Result<Parameterization> parse_parameterization(std::string_view s);  // full, diag, gd++
RILL_API Result<OptimizerKind> parse_optimizer(std::string_view s);           // sgd, adam

struct StepRecord {
  int64_t step = 0;
  float loss = 0.0f;       // mean loss of the step's batch, before the update
  float grad_norm = 0.0f;  // global gradient norm before clipping
};

// Losses of one set of evaluation tasks (mean per task, in the model's loss convention).
struct EvalReport {
  int tasks = 0;
  double model = 0.0;
  double ridge_oracle = 0.0;    // ridge with lambda = the task's own sigma^2 (Bayes-optimal)
  double least_squares = 0.0;   // lambda = 0 (minimum-norm when n < d)
  double ridge_constant = 0.0;  // lambda = EvalOptions::constant_lambda
  double adarr = 0.0;           // lambda = sigma^2 estimated from least-squares residuals
  double tunedrr = 0.0;         // lambda = min(factor * estimate, cap)
  double tunedrr_factor = 0.0, tunedrr_cap = 0.0;  // the factor and cap used (tuned or given)
  double adjusted() const { return model - ridge_oracle; }  // Vladymyrov et al.'s metric
};

struct EvalOptions {
  int tasks = 2000;
  // Evaluation tasks come from a stream disjoint from sampled training; a task set sampled with
  // this seed (sample_task_set) holds the same tasks, so a model trained on such a set is evaluated
  // with another seed.
  uint64_t seed = 0x5EED;
  std::optional<float> sigma;  // fix every task's noise level (a per-sigma curve); else the config's
  double constant_lambda = 1.0;
  // TUNEDRR's factor and cap: tuned (grid search on `tuning_tasks` separate tasks drawn like the
  // evaluation tasks, same sigma) or, with tune_tunedrr = false, these values.
  bool tune_tunedrr = true;
  int tuning_tasks = 1000;
  double tunedrr_factor = 1.0;
  double tunedrr_cap = 1e9;
};

// Tasks brought from outside (any other implementation, real data), in the reference layout:
// tokens[task][i][k] with context tokens i < n = (x_i, y_i) and the query i = n = (x_q, 0);
// targets[task] = the query's label; sigmas[task] = its noise level, or empty when unknown.
struct TaskSet {
  int d = 0, n = 0;
  int64_t tasks = 0;
  std::vector<float> tokens, targets, sigmas;
};
// safetensors with F32 tensors contexts [T, n, d], labels [T, n], queries [T, d],
// query_targets [T] and optionally sigmas [T]. The file is untrusted: shapes must agree, every
// value must be finite (an error names the tensor and the first bad index) and no other tensor may
// be there. save_task_set writes only a set load_task_set takes (InvalidArgument, or OutOfRange past
// d 1024, n 65536 or 2^24 - 1 tasks, before anything is written).
RILL_API Result<TaskSet> load_task_set(const std::string& path);
RILL_API Status save_task_set(const std::string& path, const TaskSet& tasks);

struct DiagnosticsOptions {
  int batches = 64;        // stochastic gradients sampled (each of the config's batch size)
  int reference_tasks = 2048;  // tasks of the fixed set the full gradient and curvature are measured on
  double step = 1e-3;          // finite-difference step, relative to max(1, |parameter|): 2^-20 to 1
  uint64_t seed = 0xD1A6;
};

// The diagnostics of Ahn et al. (arXiv 2310.01082, section 4) at the current parameters.
struct Diagnostics {
  int64_t parameters = 0;
  double full_loss = 0.0;
  double full_grad_norm = 0.0;
  // Stochastic gradient noise: n_b = g_b - g over `batches` batches.
  double noise_norm_mean = 0.0;
  double noise_kurtosis = 0.0;    // of the noise coordinates, each standardised; 3 for Gaussian noise
  double noise_tail_index = 0.0;  // Hill estimator on the largest 10% of ||n_b||; small = heavy-tailed
  // Curvature from the Hessian diagonal (central differences of the gradient).
  std::vector<double> hessian_diagonal;
  double robust_condition_number = 0.0;  // 99th percentile / median of |H_ii|
  // Directional smoothness along the full gradient: g^T H g / |g|^2 by central differences.
  double directional_smoothness = 0.0;
};

namespace detail {
struct Checkpoint;
}
class RILL_API Trainer;
class RILL_API TrainerGrid;
RILL_API Result<Diagnostics> diagnose(Trainer& trainer, const DiagnosticsOptions& options = {});

class RILL_API Trainer {
 public:
  // The trainer shares `ctx` (as tensors and sequences do): the Context may be moved or destroyed
  // first; the device stays until the trainer is gone too.
  // Allocates the model and its buffers, initialises the parameters from the seed and records
  // the training step. Clear errors for configurations the device cannot run. With train_tasks
  // (its d and n must match the config) every step takes the next `batch` tasks of that set,
  // cycling, instead of sampling fresh ones; the set is copied to the device once.
  static Result<Trainer> create(Context& ctx, const TrainConfig& config, const TaskSet* train_tasks = nullptr);
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  ~Trainer();

  // Runs `steps` training steps (submitted in runs of read_every); returns one record per step.
  // A non-finite loss or gradient under kStop returns FailedPrecondition naming the step and
  // what went non-finite; under kSkipBatch the step is recorded and skipped.
  Result<std::vector<StepRecord>> train(int64_t steps);
  // The same, appending each run's records to `records` as they are read: after an error (a halt
  // under kStop) the records up to it, the halting step's included, are there. A call after a
  // failed one first reads where the device is, so records never repeat or come from another step.
  Status train_into(int64_t steps, std::vector<StepRecord>& records);
  // Completed steps. After a failed train, the steps whose losses were read before the failure
  // (whole runs of read_every) until the next call, which reads where the device is (train(0) too).
  int64_t step() const;
  int64_t skipped_batches() const;

  Result<std::vector<float>> parameters();
  // InvalidArgument for the wrong count or a value that is not finite.
  Status set_parameters(std::span<const float> values);

  // Loss and gradient of the current parameters on one training batch (the one of step `step`),
  // without updating anything: for tests and for comparing with other implementations. A trainer
  // on a task set probes the batch of its next step only (`step` must be step()).
  struct Probe {
    float loss = 0.0f;
    std::vector<float> gradient;
    std::vector<float> predictions;
  };
  Result<Probe> probe(int64_t step);

  // The current model and the ridge baselines on options.tasks fresh tasks (a fixed draw for the
  // options' seed and sigma). The baselines depend on the tasks alone: the trainer keeps them, and
  // evaluating again with the same options (as a run that evaluates every K steps does) runs only
  // the model on the device, the same values bit for bit as scoring everything anew.
  Result<EvalReport> evaluate(const EvalOptions& options);

  // The current model on a task set: mean loss, its gradient, per-task predictions and the
  // baselines (the ridge oracle only when the set has sigmas; NaN otherwise). For checking rill
  // against other implementations; nothing is updated.
  struct TaskSetRun {
    EvalReport report;
    float loss = 0.0f;
    std::vector<float> gradient;
    std::vector<float> predictions;
  };
  Result<TaskSetRun> run_on(const TaskSet& tasks, const EvalOptions& baselines = {});

  // `tasks` tasks drawn by the GPU sampler from the configured distribution (the evaluation stream
  // keyed by seed: evaluate() with the same seed and sigma scores the same first tasks; sigma fixes
  // every task's noise level), downloaded as a task set: to save and feed to other implementations.
  Result<TaskSet> sample_task_set(int tasks, uint64_t seed, std::optional<float> sigma = std::nullopt);

  // Parameters, optimizer state, step (the sampler's position) and configuration, written
  // atomically to one safetensors file (the configuration as JSON metadata).
  Status save_checkpoint(const std::string& path);
  // A trainer that continues a checkpointed run: training on from it gives bit-for-bit what the
  // uninterrupted run gives. The file is untrusted; a corrupt or foreign file is a clear error.
  // A run that trained on a task set resumes with the same set (its position is in the checkpoint).
  static Result<Trainer> resume(Context& ctx, const std::string& path, const TaskSet* train_tasks = nullptr);

  const TrainConfig& config() const;

 private:
  friend class TrainerGrid;
  friend struct rill::detail::Access;
  struct Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);
  // create() with `training` false: the model alone, without a batch's workspace or the recorded
  // step (a grid's evaluation); train() and probes are then refused.
  static Result<Trainer> make(Context& ctx, const TrainConfig& config, const TaskSet* train_tasks, bool training);
  Result<EvalOptions> with_tuned_baselines(const EvalOptions& options);
  Status restore(const detail::Checkpoint& checkpoint);  // its parameters, moments and state words
  std::unique_ptr<Impl> impl_;
};

// Many independent models trained at once: a grid of seeds, noise settings, learning rates,
// depths and parameterisations (one task size d, n). Models that share a shape (d, n, data,
// layers, heads, parameterisation, convention, optimizer kind and batch) form a cohort that
// trains in the same dispatches, sampling, forward, backward, gradient reduction and optimizer
// step alike; every cohort's step is recorded into one sequence, so a step of the whole grid is
// one submission. Each model keeps its own parameters, optimizer state, curve and checkpoint and
// trains bit for bit as it would alone in a Trainer; a model halted by a non-finite step (kStop)
// stops alone.
//
//   std::vector<TrainConfig> grid;
//   for (uint64_t seed = 1; seed <= 8; ++seed) {
//     auto c = ahn_setting(AhnSetting::k1);
//     c.seed = seed;
//     grid.push_back(c);
//   }
//   auto models = rill::icl::TrainerGrid::create(ctx, grid).value();
//   auto curves = models.train(1000).value();  // curves[m]: model m's records
class RILL_API TrainerGrid {
 public:
  // The configs must agree on read_every (the host reads every model's losses together).
  static Result<TrainerGrid> create(Context& ctx, std::span<const TrainConfig> configs);
  // Continues checkpointed models (one file each, from either class; a Trainer's trained on a task
  // set is refused: a grid samples its tasks): bit for bit what their uninterrupted runs give.
  static Result<TrainerGrid> resume(Context& ctx, std::span<const std::string> paths);
  TrainerGrid(TrainerGrid&&) noexcept;
  TrainerGrid& operator=(TrainerGrid&&) noexcept;
  ~TrainerGrid();

  int models() const;
  int cohorts() const;  // groups of models that share dispatches
  Result<TrainConfig> config(int model) const;  // OutOfRange outside [0, models())

  // Runs `steps` steps of every model (submitted in runs of read_every); returns each model's
  // records, curves[model]. A halted model gets no more records; status(model) says why.
  Result<std::vector<std::vector<StepRecord>>> train(int64_t steps);
  int64_t step(int model) const;             // -1 for a model outside the grid
  int64_t skipped_batches(int model) const;  // -1 for a model outside the grid
  Status status(int model) const;  // OK, or FailedPrecondition naming the step that halted it

  Result<std::vector<float>> parameters(int model);
  // The same file Trainer::save_checkpoint writes: Trainer::resume continues the model alone.
  Status save_checkpoint(int model, const std::string& path);
  // Continues model `model` from a checkpoint of the same configuration (InvalidArgument if the
  // file's differs); the other models are untouched.
  Status load_checkpoint(int model, const std::string& path);
  // A Trainer holding a copy of the model (parameters, optimizer state, step): to evaluate,
  // probe or diagnose it, or to train it on alone.
  Result<Trainer> trainer(int model);
  Result<EvalReport> evaluate(int model, const EvalOptions& options);

 private:
  friend struct rill::detail::Access;
  struct Impl;
  explicit TrainerGrid(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::icl
