// The work folder of `rill repro-icl` (OUT/runs/): the settings the reproduction was started
// with, each finished run's result and the periodic checkpoint of the run in progress, so that a
// killed reproduction resumes where it stopped and ends with the same table as an unbroken one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rill/icl.hpp"
#include "rill/status.hpp"
#include "spike_watch.hpp"

namespace rill_cli {

struct ReproSettings {
  int64_t steps = 0, vlad_steps = 0, table1_steps = 0;
  int eval_tasks = 0, seeds = 1;
  bool quick = false, full = false;
  std::vector<std::string> experiments, rows, columns;
};

struct RunOutcome {
  bool ok = false;
  std::string error;
  rill::icl::EvalReport eval;
  int64_t skipped = 0;
  SpikeWatch spikes;
};

class ReproRuns {
 public:
  // `resume` keeps the folder's earlier runs, and refuses a folder that was started with other
  // settings (its table would mix budgets); `restart` clears them; neither refuses a folder that
  // holds any (results or checkpoints).
  static rill::Result<ReproRuns> open(const std::string& out_dir, const ReproSettings& settings, bool resume,
                                      bool restart);

  std::optional<RunOutcome> finished(const std::string& key) const;  // a run recorded earlier
  rill::Status record(const std::string& key, const RunOutcome& outcome);  // also drops its checkpoint
  std::string checkpoint_path(const std::string& key) const;
  // The spikes a checkpointed run had seen by `step`, saved just before its checkpoint at that step.
  // The file keeps those of the checkpoint on disk (`on_disk`, its step) too, so a checkpoint that
  // failed or was killed before it replaced that one still resumes from it, however many saves fail
  // in a row. None where the file is missing, unreadable or of other steps: the checkpoint is then
  // of no use, as its spikes are unknown.
  rill::Status save_spikes(const std::string& key, const SpikeWatch& watch, int64_t step, int64_t on_disk);
  std::optional<SpikeWatch> saved_spikes(const std::string& key, int64_t step) const;
  int recorded_at_open() const { return recorded_at_open_; }
  // Runs that failed without a result (the whole grid's failure, or a result that could not be
  // written): a --resume trains them again. The tool reports them and fails.
  void note_unrecorded(const std::string& key, const std::string& error) { unrecorded_.emplace_back(key, error); }
  const std::vector<std::pair<std::string, std::string>>& unrecorded() const { return unrecorded_; }

 private:
  std::string dir_;
  int recorded_at_open_ = 0;
  std::vector<std::pair<std::string, std::string>> unrecorded_;
};

// A number as the reproduction's tables print it: three significant digits ("%.3g").
std::string three_digits(double v);

}  // namespace rill_cli
