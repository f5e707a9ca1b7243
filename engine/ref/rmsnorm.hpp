// CPU reference of RMSNorm (the specification of the rmsnorm kernels): plain loops, double
// accumulation. Shapes: x, y, dy, dx: [rows, dim] row-major; gain, dgain: [dim]; rstd: [rows].
#pragma once

#include <cstdint>
#include <vector>

namespace rill::ref {

// y = x / sqrt(mean(x^2) + eps) * gain (gain may be empty: no gain); rstd saved per row. A row whose
// sum of squares is past f32's range (the kernels' accumulator) gets NaN in y and rstd.
void rmsnorm_forward(const std::vector<float>& x, const std::vector<float>& gain, int64_t rows, int64_t dim,
                     float eps, std::vector<float>& y, std::vector<float>& rstd);

// dx (and dgain when gain is not empty) from dy, for the forward above.
void rmsnorm_backward(const std::vector<float>& x, const std::vector<float>& gain, const std::vector<float>& rstd,
                      const std::vector<float>& dy, int64_t rows, int64_t dim, std::vector<float>& dx,
                      std::vector<float>& dgain);

}  // namespace rill::ref
