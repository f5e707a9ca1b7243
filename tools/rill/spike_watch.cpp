#include "spike_watch.hpp"

#include <algorithm>
#include <cmath>

#include "median.hpp"
#include "repro_icl_runs.hpp"

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
  w.window_median = median(std::move(finite));
}

void watch_steps(SpikeWatch& w, const std::vector<rill::icl::StepRecord>& records, bool window_end) {
  w.pending.insert(w.pending.end(), records.begin(), records.end());
  if (!window_end) return;
  watch_window(w, w.pending);
  w.pending.clear();
}

std::string spike_text(const SpikeWatch& w) {
  if (w.spikes == 0) return "";
  return std::to_string(w.spikes) + " spike step(s) from step " + std::to_string(w.first_step) + ", up to " +
         (std::isfinite(w.peak_ratio) ? three_digits(w.peak_ratio) + "x the window median" : "a non-finite loss");
}

std::string spike_fields(const SpikeWatch& w) {
  std::ostringstream fields;
  fields << w.spikes << ',' << w.first_step << ',' << w.peak_ratio;
  return fields.str();
}

void write_spike_section(std::ostringstream& md, const std::vector<std::string>& lines, int64_t steps) {
  md << "\n"
     << (lines.empty() ? "No loss spikes" : "Loss spikes") << " (a non-finite training loss, or from step "
     << kSpikeWindow << " on a loss over " << three_digits(kSpikeFactor) << "x the median of the previous "
     << kSpikeWindow << "-step window";
  if (steps <= kSpikeWindow) md << "; these runs train " << steps << " steps, so only non-finite losses were checked";
  md << ")" << (lines.empty() ? ".\n" : ":\n");
  for (const std::string& line : lines) md << "- " << line << "\n";
}

}  // namespace rill_cli
