// Training a reproduction's runs: every pending run of an experiment as one TrainerGrid, resumed
// from the checkpoints in OUT/runs/, watched for loss spikes, evaluated and recorded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "repro_icl_runs.hpp"
#include "rill/icl.hpp"

namespace rill_cli {

// One training run of an experiment: its key in OUT/runs/ and its configuration.
struct Cell {
  std::string key;
  rill::icl::TrainConfig config;
};

// Trains the cells without a recorded result to `steps`, watching each for loss spikes window by
// window (spike_watch.hpp), and records each one's evaluation on `eval_tasks` fresh tasks; returns every cell's outcome
// (recorded ones read back). Models are checkpointed together every `checkpoint_every` steps (0: never); cells whose
// checkpoints hold different steps (a kill between two saves) train in separate grids, so none overshoots.
std::map<std::string, RunOutcome> run_cells(rill::Context& ctx, ReproRuns& runs, const std::vector<Cell>& cells,
                                            int64_t steps, int64_t checkpoint_every, int eval_tasks);

}  // namespace rill_cli
