#include "spike_watch.hpp"

#include <algorithm>
#include <cmath>

namespace rill_cli {

void watch_window(SpikeWatch& w, const std::vector<rill::icl::StepRecord>& records) {
  std::vector<double> finite;
  for (const rill::icl::StepRecord& r : records) {
    const double ratio = std::isfinite(r.loss) ? (w.window_median > 0 ? r.loss / w.window_median : 0.0) : INFINITY;
    if (ratio > kSpikeFactor) {
      if (w.spikes++ == 0) w.first_step = r.step;
      w.peak_ratio = std::max(w.peak_ratio, ratio);
    }
    if (std::isfinite(r.loss)) finite.push_back(r.loss);
  }
  if (finite.empty()) return;
  std::nth_element(finite.begin(), finite.begin() + ptrdiff_t(finite.size() / 2), finite.end());
  w.window_median = finite[finite.size() / 2];
}

void watch_steps(SpikeWatch& w, const std::vector<rill::icl::StepRecord>& records, bool window_end) {
  w.pending.insert(w.pending.end(), records.begin(), records.end());
  if (!window_end) return;
  watch_window(w, w.pending);
  w.pending.clear();
}

}  // namespace rill_cli
