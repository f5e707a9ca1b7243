// `rill repro-icl`: the two ICL papers' headline experiments at reduced budgets, on the device.
//  1. Ahn et al. (arXiv 2310.01082): Adam vs SGD with momentum on settings 1-3 (L = 3), and on
//     setting 1 for L in {2, 4, 6, 8}: final evaluation loss of each, and SGD / Adam.
//  2. Vladymyrov et al. (arXiv 2402.14180): adjusted evaluation loss (model minus the ridge oracle
//     that knows each task's sigma) against L for FULL, DIAG and GD++ at several sigma_max.
// Writes a Markdown table, a CSV and one SVG plot per experiment into --out.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "csv_field.hpp"
#include "line_plot.hpp"
#include "median.hpp"
#include "repro_icl_grid.hpp"
#include "repro_icl_runs.hpp"
#include "repro_icl_table1.hpp"
#include "rill/rill.hpp"
#include "spike_watch.hpp"

namespace rill_cli {
namespace {

using namespace rill::icl;

// The papers' budgets, against which a shorter run's findings are read.
constexpr int64_t kAhnPaperSteps = 10000;    // Ahn et al., each setting
constexpr int64_t kVladPaperSteps = 200000;  // Vladymyrov et al., Table 1

// One line saying how many of `rows` show the paper's `finding`, and, where some do not, whether
// the budget can explain it: short runs are not evidence against the papers.
std::string finding_line(const std::string& finding, int shown, int rows, int64_t steps, int64_t paper_steps) {
  std::string line = "\nThe paper: " + finding + ". This run: ";
  if (rows == 0) return line + "no comparison finished (see the failed or non-finite cells).\n";
  line += std::to_string(shown) + " of " + std::to_string(rows) + " comparisons show it";
  if (shown == rows) return line + ".\n";
  if (steps < paper_steps)
    return line + "; the paper trained " + std::to_string(paper_steps) + " steps, this run " + std::to_string(steps) +
           ", too few for the ordering to be settled: the comparisons against it are not evidence against the " +
           "paper (more steps, --steps or --vlad-steps, test it).\n";
  return line + " at the paper's budget or more: the comparisons against it disagree with the paper.\n";
}

}  // namespace

CLI::App* add_repro_icl_command(CLI::App& app, ReproIclArgs& a) {
  auto* cmd =
      app.add_subcommand("repro-icl", "Reproduce the ICL papers' headline experiments (reduced budgets unless --full)");
  cmd->add_option("--out", a.out, "Directory for the table, CSV and plots");
  cmd->add_option("--steps", a.steps,
                  "Training steps per run (Ahn et al. experiments) [1000; --quick 150; --full 10000]")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--vlad-steps", a.vlad_steps, "Training steps per run (Vladymyrov et al. experiments) [600; --quick 150]")
      ->check(CLI::Range(1, 1000000));
  auto* quick = cmd->add_flag("--quick", a.quick,
                              "A few minutes less: fewer depths, 500 evaluation tasks, 150 steps per run unless given");
  cmd->add_option("--checkpoint-every", a.checkpoint_every,
                  "Save the run in progress every N steps in OUT/runs/ (a killed reproduction loses at most N steps)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40))
      ->default_str("off");  // not the 0 that stands for it (refused as a value)
  auto* resume = cmd->add_flag("--resume", a.resume,
                               "Continue the reproduction in --out: finished runs are kept, the interrupted one "
                               "resumes from its checkpoint (same options as the start)");
  cmd->add_flag("--restart", a.restart,
                "Discard the runs of an earlier reproduction in --out and start over (without it, or --resume, such "
                "a folder is refused)")
      ->excludes(resume);
  cmd->add_option("--experiments", a.experiments,
                  "Which experiments to run: adam-vs-sgd, adjusted-vs-depth, table1 (Vladymyrov et al.'s Table 1) "
                  "[adam-vs-sgd,adjusted-vs-depth; --full: adam-vs-sgd,table1]")
      ->delimiter(',')
      ->check(CLI::IsMember({"adam-vs-sgd", "adjusted-vs-depth", "table1"}));
  cmd->add_flag("--full", a.full,
                "The papers' budgets: 10,000 steps per Ahn et al. run; Table 1 at 200,000 steps, 5 seeds, every row "
                "and column, 100,000 evaluation tasks (hours on a big GPU)")
      ->excludes(quick);
  cmd->add_option("--table1-steps", a.table1_steps, "Training steps per Table 1 run [1000; --quick 150; --full 200000]")
      ->check(CLI::Range(int64_t(1), int64_t(10000000)));
  cmd->add_option("--seeds", a.seeds, "Table 1: seeds per cell, the best reported [5 with --full, else 1]")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--rows", a.rows,
                  "Table 1 rows: full, diag, gd++ (every L), or with depths, e.g. full:3 or diag:1-4 [L 1-3 of each; "
                  "--quick L 1-2; --full all 21]")
      ->delimiter(',');
  cmd->add_option("--columns", a.columns,
                  "Table 1 columns: 0 to 7 (sigma ~ U(0, sigma_max)), 1+3, 1+3+5 (sigma uniform over the set) "
                  "[0,1,3,1+3; --quick 1; --full all 10]")
      ->delimiter(',');
  return cmd;
}

int run_repro_icl(const ReproIclArgs& args) {
  ReproIclArgs a = args;
  if (a.experiments.empty())
    a.experiments = a.full ? std::vector<std::string>{"adam-vs-sgd", "table1"}
                           : std::vector<std::string>{"adam-vs-sgd", "adjusted-vs-depth"};
  for (size_t i = 0; i < a.experiments.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (a.experiments[i] == a.experiments[j]) {
        std::fprintf(stderr, "rill repro-icl: --experiments names '%s' twice\n", a.experiments[i].c_str());
        return 1;
      }
  auto wanted = [&](const char* experiment) {
    return std::find(a.experiments.begin(), a.experiments.end(), experiment) != a.experiments.end();
  };
  const bool ahn = wanted("adam-vs-sgd"), vladymyrov = wanted("adjusted-vs-depth"), table1 = wanted("table1");
  // An option of an experiment not run would be ignored (and still bind a --resume to its value).
  if (!table1 && (!a.rows.empty() || !a.columns.empty() || a.seeds || a.table1_steps)) {
    std::fprintf(stderr,
                 "rill repro-icl: --rows, --columns, --seeds and --table1-steps set Table 1; add table1 to "
                 "--experiments\n");
    return 1;
  }
  if ((!ahn && a.steps) || (!vladymyrov && a.vlad_steps)) {
    std::fprintf(stderr, "rill repro-icl: %s sets the %s experiment; add it to --experiments\n",
                 !ahn && a.steps ? "--steps" : "--vlad-steps", !ahn && a.steps ? "adam-vs-sgd" : "adjusted-vs-depth");
    return 1;
  }
  Table1Options t1;
  {
    // Without --full a small Table 1 that lavapipe finishes: L 1-3, four columns, 1000 steps.
    std::vector<std::string> rows = a.rows, columns = a.columns;
    if (rows.empty() && !a.full)
      rows = a.quick ? std::vector<std::string>{"full:1-2", "diag:1-2", "gd++:1-2"}
                     : std::vector<std::string>{"full:1-3", "diag:1-3", "gd++:1-3"};
    if (columns.empty() && !a.full)
      columns = a.quick ? std::vector<std::string>{"1"} : std::vector<std::string>{"0", "1", "3", "1+3"};
    auto parsed_rows = parse_table1_rows(rows);
    auto parsed_columns = parse_table1_columns(columns);
    for (const rill::Status& s : {parsed_rows.status(), parsed_columns.status()})
      if (!s.is_ok()) {
        std::fprintf(stderr, "rill repro-icl: %s\n", s.message().c_str());
        return 1;
      }
    t1.rows = *parsed_rows;
    t1.columns = *parsed_columns;
    t1.steps = a.table1_steps.value_or(a.full ? 200000 : a.quick ? 150 : 1000);
    t1.seeds = a.seeds.value_or(a.full ? 5 : 1);
    t1.eval_tasks = a.full ? 100000 : a.quick ? 500 : 2000;
    t1.checkpoint_every = a.checkpoint_every;
  }
  // The output folder must be usable before any training: a bad --out fails now, not in an hour.
  // A resume creates none: a mistyped --out is refused and stays absent.
  std::error_code ec;
  if (a.resume && !std::filesystem::is_directory(a.out, ec)) {
    std::fprintf(stderr, "rill repro-icl: --resume: '%s' holds no reproduction to resume (%s)\n", a.out.c_str(),
                 ec ? ec.message().c_str() : "no such folder");
    return 1;
  }
  std::filesystem::create_directories(a.out, ec);
  if (ec) {
    std::fprintf(stderr, "rill repro-icl: cannot create the output folder '%s': %s\n", a.out.c_str(),
                 ec.message().c_str());
    return 1;
  }
  if (auto s = rill::check_writable(a.out + "/repro-icl.md"); !s.is_ok()) {
    std::fprintf(stderr, "rill repro-icl: %s\n", s.to_string().c_str());
    return 1;
  }
  const int64_t steps = a.steps.value_or(a.full ? kAhnPaperSteps : a.quick ? 150 : 1000);
  const int64_t vlad_steps = a.vlad_steps.value_or(a.quick ? 150 : 600);
  const int eval_tasks = a.full ? 100000 : a.quick ? 500 : 2000;
  auto store = ReproRuns::open(a.out,
                               {.steps = steps,
                                .vlad_steps = vlad_steps,
                                .table1_steps = t1.steps,
                                .eval_tasks = eval_tasks,
                                .seeds = t1.seeds,
                                .quick = a.quick,
                                .full = a.full,
                                .experiments = a.experiments,
                                .rows = a.rows,
                                .columns = a.columns},
                               a.resume, a.restart);
  if (!store.is_ok()) {
    std::fprintf(stderr, "rill repro-icl: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) {
    std::fprintf(stderr, "rill repro-icl: %s\n", ctx.status().to_string().c_str());
    return 1;
  }
  std::ostringstream md, csv, table1_csv;
  csv << "experiment,setting,optimizer,param,layers,sigma_max,steps,eval_loss,ridge_oracle,adjusted,skipped,spikes,"
         "first_spike_step,spike_peak_ratio,error\n";
  std::printf("device: %s\n", ctx->device().name.c_str());
  if (a.resume) std::printf("resuming %s: %d runs already finished\n", a.out.c_str(), store->recorded_at_open());
  const auto start = std::chrono::steady_clock::now();

  PlotSpec depth_plot{"Adam vs SGD against depth (Ahn et al. setting 1)", "layers L", "eval loss", {}, {}};
  PlotSpec adjusted_plot{"Adjusted eval loss against depth (Vladymyrov et al.)", "layers L", "model - ridge oracle", {}, {}};
  if (ahn) {
    // ---- 1. Ahn et al.: Adam vs SGD ----
    const int ahn_seeds = a.full ? 6 : 1;  // the paper's 6 seeds; the cells show medians
    md << "### Adam vs SGD (Ahn et al.), " << steps << " steps, batch 1000, evaluation on " << eval_tasks
       << " fresh tasks" << (ahn_seeds > 1 ? ", median of " + std::to_string(ahn_seeds) + " seeds" : "")
       << "\n\n| setting | L | Adam eval loss | SGD eval loss | SGD / Adam |\n|---|---|---|---|---|\n";
    struct AhnRun {
      int setting, layers;
    };
    std::vector<AhnRun> runs = {{1, 3}, {2, 3}, {3, 3}};
    for (int l : a.quick ? std::vector<int>{2, 6} : std::vector<int>{2, 4, 6, 8}) runs.push_back({1, l});
    if (a.full)  // the paper's depth sweep on every setting
      for (int setting : {2, 3})
        for (int l : {2, 4, 6, 8}) runs.push_back({setting, l});
    PlotSeries adam_depth{"adam", {}, false}, sgd_depth{"sgd", {}, false};
    std::vector<std::string> spike_lines;
    int adam_ahead = 0, compared = 0;
    // Seed 1 keeps the key of the one-seed runs; --full trains the paper's 6 seeds and reports medians.
    auto ahn_cell = [](const AhnRun& run, int o, int seed) {
      TrainConfig c = ahn_setting(static_cast<AhnSetting>(run.setting));  // runs hold 1, 2 and 3 alone
      c.model.layers = run.layers;
      c.optimizer.kind = o == 0 ? OptimizerKind::kAdam : OptimizerKind::kSgd;
      c.on_nonfinite = NonFinitePolicy::kSkipBatch;  // heavy tails can overflow f32 in a batch
      c.seed = uint64_t(seed);
      return Cell{"ahn" + std::to_string(run.setting) + "-L" + std::to_string(run.layers) +
                      (o == 0 ? "-adam" : "-sgd") + (seed == 1 ? "" : "-seed" + std::to_string(seed)),
                  c};
    };
    std::vector<Cell> cells;
    for (const AhnRun& run : runs)
      for (int o = 0; o < 2; ++o)
        for (int seed = 1; seed <= ahn_seeds; ++seed) cells.push_back(ahn_cell(run, o, seed));
    const auto outcomes = run_cells(ctx.value(), *store, cells, steps, a.checkpoint_every, eval_tasks);
    for (const AhnRun& run : runs) {
      double loss[2] = {0, 0};
      std::string cell[2];
      for (int o = 0; o < 2; ++o) {
        std::vector<double> finished;
        int64_t skipped = 0;
        int diverged = 0;  // finished with a non-finite evaluation loss: no place in a median
        for (int seed = 1; seed <= ahn_seeds; ++seed) {
          const RunOutcome& r = outcomes.at(ahn_cell(run, o, seed).key);
          skipped += r.skipped;
          if (r.ok && std::isfinite(r.eval.model)) finished.push_back(r.eval.model);
          if (r.ok && !std::isfinite(r.eval.model)) ++diverged;
          csv << "adam_vs_sgd,ahn" << run.setting << ',' << (o == 0 ? "adam" : "sgd") << ",full," << run.layers << ",0,"
              << steps << ',' << (r.ok ? r.eval.model : NAN) << ',' << (r.ok ? r.eval.ridge_oracle : NAN) << ",,"
              << r.skipped << ',' << spike_fields(r.spikes) << ',' << csv_field(r.error) << "\n";
          if (r.spikes.spikes > 0)
            spike_lines.push_back("setting " + std::to_string(run.setting) + " L" + std::to_string(run.layers) + " " +
                                  (o == 0 ? "adam" : "sgd") + ", seed " + std::to_string(seed) + ": " +
                                  spike_text(r.spikes));
        }
        loss[o] = median(finished);
        const std::string not_finite = diverged ? std::to_string(diverged) + " not finite" : "";
        cell[o] = finished.empty()
                      ? (diverged ? not_finite : "failed")
                      : three_digits(loss[o]) + (skipped ? " (" + std::to_string(skipped) + " skipped)" : "") +
                            (ahn_seeds > 1 ? ", " + std::to_string(finished.size()) + " seeds" : "") +
                            (diverged ? ", " + not_finite : "");
        std::printf("ahn setting %d L=%d %s: %s\n", run.setting, run.layers, o == 0 ? "adam" : "sgd", cell[o].c_str());
        std::fflush(stdout);
      }
      md << "| " << run.setting << " | " << run.layers << " | " << cell[0] << " | " << cell[1] << " | "
         << three_digits(loss[1] / loss[0]) << " |\n";
      if (std::isfinite(loss[0]) && std::isfinite(loss[1])) {
        ++compared;
        if (loss[0] < loss[1]) ++adam_ahead;
      }
      if (run.setting == 1) {
        adam_depth.points.emplace_back(run.layers, loss[0]);
        sgd_depth.points.emplace_back(run.layers, loss[1]);
      }
    }
    auto by_x = [](PlotSeries& s) { std::sort(s.points.begin(), s.points.end()); };
    by_x(adam_depth);
    by_x(sgd_depth);
    depth_plot.series = {adam_depth, sgd_depth};
    md << finding_line("Adam reaches a lower loss than SGD with momentum (SGD / Adam above 1)", adam_ahead, compared,
                       steps, kAhnPaperSteps);
    write_spike_section(md, spike_lines, steps);
  }
  if (vladymyrov) {
    // ---- 2. Vladymyrov et al.: adjusted evaluation loss against L ----
    const std::vector<float> sigma_maxes = a.quick ? std::vector<float>{1.0f} : std::vector<float>{1.0f, 3.0f};
    const std::vector<int> depths = a.quick ? std::vector<int>{1, 3} : std::vector<int>{1, 2, 3, 4};
    md << "\n### Adjusted evaluation loss against depth (Vladymyrov et al.), " << vlad_steps
       << " steps of Adam (lr 2e-3), batch 512, d=10, n=20, sigma ~ U(0, sigma_max)\n\n"
       << "| param | sigma_max | L | eval loss | ridge oracle | adjusted |\n|---|---|---|---|---|---|\n";
    int deeper_better = 0, series_compared = 0;
    std::vector<std::string> spike_lines;
    const Parameterization params[] = {Parameterization::kFull, Parameterization::kDiag, Parameterization::kGdPlusPlus};
    auto vlad_cell = [](Parameterization p, float sigma_max, int l) {
      TrainConfig c = vladymyrov_setting(p, sigma_max);
      c.model.layers = l;
      c.batch = 512;
      c.optimizer.lr = 2e-3f;
      c.on_nonfinite = NonFinitePolicy::kSkipBatch;
      return Cell{"vladymyrov-" + std::string(name(p)) + "-sigma" + three_digits(sigma_max) + "-L" + std::to_string(l),
                  c};
    };
    std::vector<Cell> cells;
    for (float sigma_max : sigma_maxes)
      for (Parameterization p : params)
        for (int l : depths) cells.push_back(vlad_cell(p, sigma_max, l));
    const auto outcomes = run_cells(ctx.value(), *store, cells, vlad_steps, a.checkpoint_every, eval_tasks);
    for (float sigma_max : sigma_maxes) {
      for (Parameterization p : params) {
        PlotSeries series{std::string(name(p)) + ", sigma_max " + three_digits(sigma_max), {}, sigma_max > 1.5f};
        for (int l : depths) {
          const RunOutcome& r = outcomes.at(vlad_cell(p, sigma_max, l).key);
          const double adjusted = r.ok ? r.eval.adjusted() : NAN;
          md << "| " << name(p) << " | " << three_digits(sigma_max) << " | " << l << " | "
             << (r.ok ? three_digits(r.eval.model) : "failed") << " | "
             << (r.ok ? three_digits(r.eval.ridge_oracle) : "") << " | " << (r.ok ? three_digits(adjusted) : "")
             << " |\n";
          csv << "adjusted_vs_depth,vladymyrov,adam," << name(p) << ',' << l << ',' << sigma_max << ',' << vlad_steps
              << ',' << (r.ok ? r.eval.model : NAN) << ',' << (r.ok ? r.eval.ridge_oracle : NAN) << ',' << adjusted
              << ',' << r.skipped << ',' << spike_fields(r.spikes) << ',' << csv_field(r.error) << "\n";
          if (r.spikes.spikes > 0)
            spike_lines.push_back(std::string(name(p)) + " sigma_max " + three_digits(sigma_max) + " L" +
                                  std::to_string(l) + ": " + spike_text(r.spikes));
          std::printf("vladymyrov %s sigma_max=%g L=%d: adjusted %s\n", std::string(name(p)).c_str(), sigma_max, l,
                      r.ok ? three_digits(adjusted).c_str() : r.error.c_str());
          std::fflush(stdout);
          if (r.ok) series.points.emplace_back(l, adjusted);
        }
        // FULL and DIAG (GD++ is the fixed-noise specialist the paper finds falling behind): the
        // deepest model against the shallowest, where both finished with a finite loss.
        if (p != Parameterization::kGdPlusPlus && series.points.size() >= 2 &&
            series.points.front().first == depths.front() && series.points.back().first == depths.back() &&
            std::isfinite(series.points.front().second) && std::isfinite(series.points.back().second)) {
          ++series_compared;
          if (series.points.back().second < series.points.front().second) ++deeper_better;
        }
        adjusted_plot.series.push_back(std::move(series));
      }
    }
    md << finding_line(
        "FULL and DIAG models get closer to the ridge oracle with depth (here: the adjusted loss of "
        "the deepest L below L = " +
            std::to_string(depths.front()) + ", per sigma_max)",
        deeper_better, series_compared, vlad_steps, kVladPaperSteps);
    write_spike_section(md, spike_lines, vlad_steps);
  }
  if (table1) run_table1(ctx.value(), *store, t1, md, table1_csv);
  const double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  md << "\n(" << ctx->device().name << ", " << three_digits(minutes) << " minutes in all.)\n";

  std::string error;
  const std::string dir = a.out + "/";
  bool ok = write_text_atomic(dir + "repro-icl.md", md.str(), &error) &&
            write_text_atomic(dir + "repro-icl.csv", csv.str(), &error) &&
            (!ahn || write_text_atomic(dir + "adam-vs-sgd-depth.svg", line_plot_svg(depth_plot), &error)) &&
            (!vladymyrov || write_text_atomic(dir + "adjusted-vs-depth.svg", line_plot_svg(adjusted_plot), &error)) &&
            (!table1 || write_text_atomic(dir + "table1.csv", table1_csv.str(), &error));
  if (!ok) {
    std::fprintf(stderr, "rill repro-icl: %s\n", error.c_str());
    return 1;
  }
  std::printf("\n%s\nwrote %srepro-icl.md, repro-icl.csv%s%s%s\n", md.str().c_str(), dir.c_str(),
              ahn ? ", adam-vs-sgd-depth.svg" : "", vladymyrov ? ", adjusted-vs-depth.svg" : "",
              table1 ? ", table1.csv" : "");
  if (const auto& failed = store->unrecorded(); !failed.empty()) {
    std::fprintf(stderr,
                 "rill repro-icl: %zu runs failed without a result (first: %s: %s); their checkpoints are kept: "
                 "the same command with --resume trains them again\n",
                 failed.size(), failed.front().first.c_str(), failed.front().second.c_str());
    return 1;
  }
  return 0;
}

}  // namespace rill_cli
