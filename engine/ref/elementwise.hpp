// CPU references of the elementwise ops (double arithmetic).
#pragma once

#include <cstdint>
#include <vector>

namespace rill::ref {

// act: 0 identity, 1 sigmoid, 2 silu.
double activation(int act, double x);
double activation_grad(int act, double x);

void glu_forward(const std::vector<float>& a, const std::vector<float>& b, int act, std::vector<float>& out);
void glu_backward(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& dy, int act,
                  std::vector<float>& da, std::vector<float>& db);

// Rows of `vocab` logits: probs = softmax; loss = logsumexp - logit[target] (targets may be empty).
void softmax_cross_entropy(const std::vector<float>& logits, const std::vector<uint32_t>& targets, int64_t rows,
                           int64_t vocab, std::vector<float>& probs, std::vector<float>& loss);

void embedding_forward(const std::vector<uint32_t>& ids, const std::vector<float>& table, int64_t vocab, int64_t dim,
                       std::vector<float>& out);
void embedding_backward(const std::vector<uint32_t>& ids, const std::vector<float>& dy, int64_t vocab, int64_t dim,
                        std::vector<float>& dtable);

}  // namespace rill::ref
