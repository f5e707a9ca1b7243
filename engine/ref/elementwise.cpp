#include "elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace rill::ref {

using std::size_t;

double activation(int act, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return act == 1 ? s : act == 2 ? x * s : x;
}

double activation_grad(int act, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return act == 1 ? s * (1.0 - s) : act == 2 ? s * (1.0 + x * (1.0 - s)) : 1.0;
}

void glu_forward(const std::vector<float>& a, const std::vector<float>& b, int act, std::vector<float>& out) {
  out.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = float(a[i] * activation(act, b[i]));
}

void glu_backward(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& dy, int act,
                  std::vector<float>& da, std::vector<float>& db) {
  da.resize(a.size());
  db.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    da[i] = float(dy[i] * activation(act, b[i]));
    db[i] = float(double(dy[i]) * a[i] * activation_grad(act, b[i]));
  }
}

void softmax_cross_entropy(const std::vector<float>& logits, const std::vector<uint32_t>& targets, int64_t rows,
                           int64_t vocab, std::vector<float>& probs, std::vector<float>& loss) {
  probs.resize(logits.size());
  loss.assign(size_t(rows), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = &logits[size_t(r * vocab)];
    double m = -INFINITY, sum = 0.0;
    for (int64_t c = 0; c < vocab; ++c) m = std::max(m, double(x[c]));
    for (int64_t c = 0; c < vocab; ++c) sum += std::exp(x[c] - m);
    for (int64_t c = 0; c < vocab; ++c) probs[size_t(r * vocab + c)] = float(std::exp(x[c] - m) / sum);
    if (!targets.empty()) {
      const uint32_t t = targets[size_t(r)];
      loss[size_t(r)] = t < vocab ? float(m + std::log(sum) - x[t]) : NAN;
    }
  }
}

void embedding_forward(const std::vector<uint32_t>& ids, const std::vector<float>& table, int64_t vocab, int64_t dim,
                       std::vector<float>& out) {
  out.assign(ids.size() * size_t(dim), 0.0f);
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < vocab)
      for (int64_t j = 0; j < dim; ++j) out[t * size_t(dim) + size_t(j)] = table[size_t(ids[t] * dim + j)];
}

void embedding_backward(const std::vector<uint32_t>& ids, const std::vector<float>& dy, int64_t vocab, int64_t dim,
                        std::vector<float>& dtable) {
  std::vector<double> acc(size_t(vocab * dim), 0.0);
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < vocab)
      for (int64_t j = 0; j < dim; ++j) acc[size_t(ids[t] * dim + j)] += dy[t * size_t(dim) + size_t(j)];
  dtable.assign(acc.begin(), acc.end());
}

}  // namespace rill::ref
