// Loss-spike detection for long training runs: a step whose training loss is not finite, or more
// than kSpikeFactor times the median loss of the previous window (runs are cut into windows of
// kSpikeWindow steps from step 0; the first window has no reference, so only its non-finite losses
// count). Counted and
// reported, never silently kept (rill repro-icl).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "rill/icl.hpp"

namespace rill_cli {

constexpr double kSpikeFactor = 10.0;
constexpr int64_t kSpikeWindow = 500;  // steps per window

struct SpikeWatch {
  int64_t spikes = 0;          // steps over the threshold
  int64_t first_step = -1;     // the first of them; -1: none
  double peak_ratio = 0.0;     // the largest loss / window median (inf for a non-finite loss)
  double window_median = 0.0;  // median loss of the last window (0: none yet)
  // The records of the window in progress, held until it ends: a window is judged whole however
  // the training was cut into calls (checkpoints, a resume).
  std::vector<rill::icl::StepRecord> pending;
};

// Feeds one window of a run's records (consecutive steps): each step against the median of the
// window before, then this window's median becomes the reference for the next.
void watch_window(SpikeWatch& watch, const std::vector<rill::icl::StepRecord>& records);
// Feeds consecutive records of the window in progress; `window_end` when they end it (a multiple
// of kSpikeWindow steps, or the run's last step), which judges the whole window.
void watch_steps(SpikeWatch& watch, const std::vector<rill::icl::StepRecord>& records, bool window_end);

// "3 spike step(s) from step 700, up to 12.5x the window median"; empty when there were none.
std::string spike_text(const SpikeWatch& watch);
// The CSV fields "spikes,first_spike_step,spike_peak_ratio" of a run.
std::string spike_fields(const SpikeWatch& watch);
// Writes what the watch checked (how, and which steps of runs of `steps` steps) and the spiking
// runs (`lines`, one each), or that there were none.
void write_spike_section(std::ostringstream& md, const std::vector<std::string>& lines, int64_t steps);

}  // namespace rill_cli
