#include "repro_icl_grid.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace rill_cli {
using namespace rill::icl;

std::map<std::string, RunOutcome> run_cells(rill::Context& ctx, ReproRuns& runs, const std::vector<Cell>& cells,
                                            int64_t steps, int64_t checkpoint_every, int eval_tasks) {
  std::map<std::string, RunOutcome> out;
  auto record = [&](const std::string& key, RunOutcome r) {
    if (auto s = runs.record(key, r); !s.is_ok()) {
      r = {false, s.message(), {}, r.skipped, r.spikes};
      runs.note_unrecorded(key, s.message());
    }
    out[key] = r;
  };
  std::map<int64_t, std::vector<Cell>> by_start;  // pending cells by the step their checkpoint holds
  std::map<std::string, SpikeWatch> resumed_spikes;
  for (const Cell& c : cells) {
    if (auto done = runs.finished(c.key)) {
      out[c.key] = *done;
      continue;
    }
    int64_t start = 0;
    std::error_code ec;
    if (std::filesystem::exists(runs.checkpoint_path(c.key), ec)) {
      // Usable where this cell's model loads it (its configuration) and the spikes seen up to its
      // step were saved with it; else the run starts over (the next save replaces both).
      auto probe = TrainerGrid::create(ctx, std::span<const TrainConfig>(&c.config, 1));
      const bool loads = probe.is_ok() && probe->load_checkpoint(0, runs.checkpoint_path(c.key)).is_ok();
      // A checkpoint past this budget is not this run's (the file is untrusted): started over.
      const bool within = loads && probe->step(0) <= steps;
      const auto spikes = within ? runs.saved_spikes(c.key, probe->step(0)) : std::nullopt;
      if (spikes) {
        start = probe->step(0);
        resumed_spikes[c.key] = *spikes;
      } else {
        std::printf(
            "%s: its checkpoint cannot be resumed (another configuration, unreadable, past this "
            "budget of steps, or its spikes unsaved); the run starts over\n",
            c.key.c_str());
      }
    }
    by_start[start].push_back(c);
  }
  for (const auto& [start, group] : by_start) {
    std::vector<TrainConfig> configs;
    for (const Cell& c : group) configs.push_back(c.config);
    std::vector<SpikeWatch> watches(group.size());
    std::vector<int64_t> on_disk(group.size(), start);  // the step of each run's checkpoint on disk
    auto grid = TrainerGrid::create(ctx, configs);
    // A failure of the whole grid (device memory, a lost device, a file that cannot be written) is
    // not the runs' result: reported in this table, never recorded, and the checkpoints stay for
    // --resume.
    auto fail_all = [&](const rill::Status& s) {
      for (size_t m = 0; m < group.size(); ++m) {
        out[group[m].key] = {false, s.message(), {}, 0, watches[m]};
        runs.note_unrecorded(group[m].key, s.message());
      }
    };
    if (!grid.is_ok()) {
      fail_all(grid.status());
      continue;
    }
    rill::Status trained = rill::Status::ok();
    for (size_t m = 0; start > 0 && m < group.size() && trained.is_ok(); ++m) {
      trained = grid->load_checkpoint(int(m), runs.checkpoint_path(group[m].key));
      // Loaded twice (probed above): a file replaced in between would train from another step.
      if (trained.is_ok() && grid->step(int(m)) != start)
        trained = rill::failed_precondition(
            "the checkpoint of " + group[m].key + " changed while it was resumed (step " +
            std::to_string(grid->step(int(m))) + ", probed at " + std::to_string(start) + ")");
      if (!trained.is_ok()) break;
      watches[m] = resumed_spikes.at(group[m].key);
      std::printf("%s: resumed its checkpoint at step %lld\n", group[m].key.c_str(), (long long)start);
    }
    std::printf("training %zu runs together (%d kernel cohorts), %lld steps each\n", group.size(), grid->cohorts(),
                (long long)steps);
    std::fflush(stdout);
    // A progress line at every tenth of the budget: a --full table trains for hours.
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t report_every = std::max<int64_t>(1, steps / 10);
    for (int64_t at = start; at < steps && trained.is_ok();) {
      const int64_t to_save = checkpoint_every > 0 ? checkpoint_every - at % checkpoint_every : steps;
      const int64_t run = std::min({to_save, steps - at, kSpikeWindow - at % kSpikeWindow});
      auto curves = grid->train(run);
      if (!curves.is_ok()) {
        trained = curves.status();
        break;
      }
      // Windows judged whole, however checkpoints cut them (their records wait in the watch).
      const bool window_end = (at + run) % kSpikeWindow == 0 || at + run == steps;
      for (size_t m = 0; m < group.size(); ++m) watch_steps(watches[m], (*curves)[m], window_end);
      if ((at + run) / report_every != at / report_every && at + run < steps) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("  step %lld of %lld, %.0f s, about %.0f s to go\n", (long long)(at + run), (long long)steps,
                    seconds, seconds / double(at + run - start) * double(steps - at - run));
        std::fflush(stdout);
      }
      at += run;
      if (checkpoint_every > 0 && at % checkpoint_every == 0 && at < steps)
        for (size_t m = 0; m < group.size() && trained.is_ok(); ++m) {
          // The spikes first, tagged with the step and keeping the previous checkpoint's: a failed
          // write or a kill between the two files leaves the previous checkpoint resumable.
          trained = runs.save_spikes(group[m].key, watches[m], at, on_disk[m]);
          if (trained.is_ok()) trained = grid->save_checkpoint(int(m), runs.checkpoint_path(group[m].key));
          if (trained.is_ok()) on_disk[m] = at;
        }
    }
    if (!trained.is_ok()) {
      fail_all(trained);
      continue;
    }
    // The trained models are kept before evaluating them: an evaluation that fails (device memory,
    // a lost device) is then redone by --resume without training again. Best effort: a model whose
    // save fails is still evaluated (only a failed evaluation would then train it again).
    for (size_t m = 0; m < group.size() && start < steps; ++m) {
      if (!grid->status(int(m)).is_ok()) continue;  // a halted run's result is its halt, recorded below
      const int64_t at = grid->step(int(m));
      rill::Status kept = runs.save_spikes(group[m].key, watches[m], at, on_disk[m]);
      if (kept.is_ok()) kept = grid->save_checkpoint(int(m), runs.checkpoint_path(group[m].key));
      if (!kept.is_ok())
        std::printf("%s: its trained model was not saved before evaluating (%s)\n", group[m].key.c_str(),
                    kept.message().c_str());
    }
    for (size_t m = 0; m < group.size(); ++m) {
      const int model = int(m);
      const int64_t skipped = grid->skipped_batches(model);
      if (auto s = grid->status(model); !s.is_ok()) {
        record(group[m].key, {false, s.message(), {}, skipped, watches[m]});
        continue;
      }
      auto eval = grid->evaluate(model, {.tasks = eval_tasks});
      if (eval.is_ok()) {
        record(group[m].key, {true, "", *eval, skipped, watches[m]});
      } else {
        // Not the run's result: reported, never recorded, left for --resume (the command exits 1).
        out[group[m].key] = {false, eval.status().message(), {}, skipped, watches[m]};
        runs.note_unrecorded(group[m].key, eval.status().message());
      }
    }
  }
  return out;
}

}  // namespace rill_cli
