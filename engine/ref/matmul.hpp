// CPU reference of matmul: C[b] = op(A[b]) op(B[b]) (+ bias) (+ C[b] when accumulating), double
// accumulation. A is [batch_a, M, K] ([batch_a, K, M] when transposed), B is [batch_b, K, N]
// ([batch_b, N, K] when transposed); a batch of 1 is broadcast. C is [batch, M, N].
#pragma once

#include <cstdint>
#include <vector>

namespace rill::ref {

struct MatmulShape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool a_batched = true, b_batched = true;
  bool transpose_a = false, transpose_b = false;
};

void matmul(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& bias,
            const MatmulShape& s, bool accumulate, std::vector<float>& c);

}  // namespace rill::ref
