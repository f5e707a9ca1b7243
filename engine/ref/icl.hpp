// CPU reference of the in-context-learning (ICL) linear transformers (double arithmetic); the
// specification the ICL kernels are tested against. The ridge baselines of evaluation are engine
// code (engine/src/icl/ridge.hpp). Shapes: d features, n context tokens, L layers, H heads; tokens
// have width D1 = d + 1 and a task has T = n + 1 of them.
//   tokens:  [tasks][T][D1] float, task-major. Context token i < n is (x_i, y_i); the query token
//            (index n, last) is (x_q, 0).
//   targets: [tasks] float, the query's true label y_q.
//   params:  [L][H][S] double, block b = l*H + h of size S = block_size(shape).
// The model unifies Ahn et al. (arXiv 2310.01082) and Vladymyrov et al. (arXiv 2402.14180). Layer l,
// with every token updated at once from the layer's input:
//   A = sum_{j<n} e_j e_j^T                      (context tokens only: the query is not a key/value)
//   B = s * sum_h P_{l,h} A Q_{l,h}              (s = 1/n for kAhn, 1 for kVladymyrov)
//   e_i <- e_i + B e_i                           (i = 0..n, the query included)
// After L layers pred = -e_n[d] (minus the query's label slot); a task's loss is c * (pred - y_q)^2
// (c = 1 for kAhn, 1/2 for kVladymyrov); a batch's loss is the mean over its tasks.
#pragma once

#include <cstdint>
#include <vector>

namespace rill::ref::icl {

// How P and Q of one (layer, head) block are parameterized; S = block_size().
//   kFull:       S = 2*D1*D1: P then Q, each D1 x D1 row-major.
//   kDiag:       S = 4: [p_x, p_y, q_x, q_y]; P = diag(p_x,..,p_x, p_y), Q = diag(q_x,..,q_x, q_y).
//   kGdPlusPlus: S = 3: [p_x, p_y, q_x]; as kDiag with q_y = 0 fixed (GD++ of Vladymyrov et al.).
enum class Param { kFull, kDiag, kGdPlusPlus };

// kAhn: s = 1/n, c = 1. kVladymyrov: s = 1, c = 1/2 (see the file header).
enum class Convention { kAhn, kVladymyrov };

struct ModelShape {
  int d = 1, n = 1, layers = 1, heads = 1;
  Param param = Param::kFull;
  Convention convention = Convention::kAhn;
};

// Parameters of one (layer, head) block, and of the model: layers * heads * block_size.
int64_t block_size(const ModelShape& m);
int64_t param_count(const ModelShape& m);

// The scale s of B and the loss factor c of the shape's convention.
double update_scale(const ModelShape& m);
double loss_scale(Convention c);

// One task's loss c * (pred - target)^2, and the mean of it over tasks (0 for no tasks; throws
// std::invalid_argument when the sizes differ).
double task_loss(Convention c, double pred, double target);
double mean_loss(Convention c, const std::vector<double>& preds, const std::vector<float>& targets);

// Mean loss over the tasks (tasks = targets.size(); 0 for no tasks); preds, when given, gets one
// prediction per task. Throws std::invalid_argument when the shape is invalid or a size disagrees.
double forward(const ModelShape& m, const std::vector<double>& params, const std::vector<float>& tokens,
               const std::vector<float>& targets, std::vector<double>* preds = nullptr);

// Mean loss (as forward) and grad = d loss / d params (resized to param_count): an analytic backward
// through all layers that keeps each layer's input tokens.
double loss_and_gradient(const ModelShape& m, const std::vector<double>& params, const std::vector<float>& tokens,
                         const std::vector<float>& targets, std::vector<double>& grad);

// ---- optimizers, in place ----

// g *= min(1, max_norm / ||g||_2); max_norm <= 0 disables clipping and a zero g is left as is.
// Returns ||g||_2 before clipping.
double clip_global_norm(std::vector<double>& grad, double max_norm);

// Heavy-ball SGD: v = momentum * v + g; p -= lr * v. An empty velocity starts at zeros.
struct SgdState {
  std::vector<double> velocity;
};
void sgd_step(std::vector<double>& params, const std::vector<double>& grad, SgdState& state, double lr,
              double momentum);

// Adam: t += 1; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Empty m and v start at zeros.
struct AdamState {
  std::vector<double> m, v;
  int64_t t = 0;
};
void adam_step(std::vector<double>& params, const std::vector<double>& grad, AdamState& state, double lr, double beta1,
               double beta2, double eps);

}  // namespace rill::ref::icl
