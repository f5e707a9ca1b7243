#include "rmsnorm.hpp"

#include <cfloat>
#include <cmath>

namespace rill::ref {

void rmsnorm_forward(const std::vector<float>& x, const std::vector<float>& gain, int64_t rows, int64_t dim,
                     float eps, std::vector<float>& y, std::vector<float>& rstd) {
  y.assign(size_t(rows * dim), 0.0f);
  rstd.assign(size_t(rows), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = &x[size_t(r * dim)];
    double ss = 0.0;
    for (int64_t c = 0; c < dim; ++c) ss += double(xr[c]) * xr[c];
    // The kernels sum in f32: a row whose squares overflow it normalizes to NaN (loud), not to the
    // zeros of 1/sqrt(inf).
    const double s = ss > double(FLT_MAX) ? NAN : 1.0 / std::sqrt(ss / double(dim) + eps);
    rstd[size_t(r)] = float(s);
    for (int64_t c = 0; c < dim; ++c)
      y[size_t(r * dim + c)] = float(xr[c] * s * (gain.empty() ? 1.0 : double(gain[size_t(c)])));
  }
}

void rmsnorm_backward(const std::vector<float>& x, const std::vector<float>& gain, const std::vector<float>& rstd,
                      const std::vector<float>& dy, int64_t rows, int64_t dim, std::vector<float>& dx,
                      std::vector<float>& dgain) {
  dx.assign(size_t(rows * dim), 0.0f);
  std::vector<double> dg(size_t(dim), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t base = size_t(r * dim);
    const double s = rstd[size_t(r)];
    // gd = gain * dy; dx = s * gd - s^3 / dim * x * sum(gd * x)
    double dot = 0.0;
    for (int64_t c = 0; c < dim; ++c) {
      const double g = gain.empty() ? 1.0 : gain[size_t(c)];
      dot += g * dy[base + size_t(c)] * x[base + size_t(c)];
    }
    for (int64_t c = 0; c < dim; ++c) {
      const double g = gain.empty() ? 1.0 : gain[size_t(c)];
      dx[base + size_t(c)] = float(s * g * dy[base + size_t(c)] - s * s * s / double(dim) * dot * x[base + size_t(c)]);
      dg[size_t(c)] += double(dy[base + size_t(c)]) * x[base + size_t(c)] * s;
    }
  }
  dgain.clear();
  if (!gain.empty())
    for (double v : dg) dgain.push_back(float(v));
}

}  // namespace rill::ref
