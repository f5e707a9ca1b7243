// Ridge-regression baselines of in-context regression, in double precision on the CPU: the
// predictions a classical estimator makes from a task's context, to compare the model against.
// Shapes: d features, n context tokens; a task is n + 1 tokens of width d + 1.
#pragma once

#include <memory>
#include <vector>

namespace rill::icl {

// One task in the reference layout: tokens[i * (d + 1) + k], context tokens i < n, query i = n.
struct TaskView {
  int d = 0, n = 0;
  const float* tokens = nullptr;
};

// x_q . w with w = argmin ||y - X w||^2 + lambda ||w||^2, from the d x d primal system
// (X^T X + lambda I) w = X^T y when n >= d, else the n x n dual one w = X^T (X X^T + lambda I)^{-1} y.
// When the system is numerically singular (lambda = 0 and X of rank < min(n, d): repeated or
// collinear inputs) w is the minimum-norm least-squares solution, directions whose eigenvalue is
// below 1e-12 times the largest being treated as null. Finite for finite tokens. The ridge oracle
// is lambda = the task's true noise variance: with the prior w ~ N(0, I) it is Bayes-optimal.
double ridge_predict(const TaskView& task, double lambda);

// sigma^2 estimated from the least-squares residuals, ||y - X w_ls||^2 / (n - d); 0 when n <= d
// (the fit is exact, nothing is left to estimate from).
double adarr_sigma2(const TaskView& task);

// Adaptive ridge: ridge_predict with lambda = adarr_sigma2 (least squares when n <= d).
double adarr_predict(const TaskView& task);

// Tuned ridge: ridge_predict with lambda = min(factor * adarr_sigma2, cap).
double tunedrr_predict(const TaskView& task, double factor, double cap);

// The five baselines of one task from one normal system (the same values as the functions above,
// bit for bit): the ridge oracle at oracle_lambda, least squares, ridge at constant_lambda, ADARR
// and TUNEDRR.
struct BaselinePredictions {
  double ridge_oracle = 0.0, least_squares = 0.0, ridge_constant = 0.0, adarr = 0.0, tunedrr = 0.0;
};
BaselinePredictions baseline_predictions(const TaskView& task, double oracle_lambda, double constant_lambda,
                                         double tunedrr_factor, double tunedrr_cap);

// baseline_predictions for task after task, the same values bit for bit, with its buffers kept
// between tasks: a thread scoring thousands of tasks allocates nothing per task.
class BaselineScorer {
 public:
  BaselineScorer();
  ~BaselineScorer();
  BaselineScorer(const BaselineScorer&) = delete;
  BaselineScorer& operator=(const BaselineScorer&) = delete;
  BaselinePredictions predictions(const TaskView& task, double oracle_lambda, double constant_lambda,
                                  double tunedrr_factor, double tunedrr_cap);

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
};

// TUNEDRR's factor and cap minimising the mean squared error of tunedrr_predict over `tasks`
// (targets[t] is task t's query label), by grid search: factor in {1/4 .. 4}, cap in {1/4 .. 16, inf}.
struct TunedRR {
  double factor = 1.0, cap = 1e9;
};
TunedRR tune_tunedrr(const std::vector<TaskView>& tasks, const std::vector<float>& targets);

}  // namespace rill::icl
