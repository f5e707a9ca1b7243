// The median of a sample: the one definition behind every median the tool reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace rill_cli {

// The middle value, or the mean of the two middle ones for an even count; NaN for no values. NaN
// values are left out: they have no order (sorting them is undefined behaviour).
inline double median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return NAN;
  const auto mid = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  return (*std::max_element(values.begin(), mid) + *mid) / 2;
}

}  // namespace rill_cli
