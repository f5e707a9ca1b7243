// Ridge-regression baselines of in-context regression, in double precision on the CPU: the
// predictions a classical estimator makes from a task's context, to compare the model against.
#pragma once

namespace rill::icl {

// One task in the reference layout: tokens[i * (d + 1) + k], context tokens i < n, query i = n.
struct TaskView {
  int d = 0, n = 0;
  const float* tokens = nullptr;
};

// x_q . w with w = argmin ||y - X w||^2 + lambda ||w||^2. With lambda = 0 and X^T X singular
// (n < d, or repeated inputs) the minimum-norm least-squares solution.
double ridge_predict(const TaskView& task, double lambda);
// sigma^2 estimated from the least-squares residuals, ||y - X w_ls||^2 / (n - d); 0 when n <= d
// (the fit is exact, nothing is left to estimate from).
double adarr_sigma2(const TaskView& task);

}  // namespace rill::icl
