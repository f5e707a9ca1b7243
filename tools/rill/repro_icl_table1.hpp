// Table 1 of Vladymyrov et al. (arXiv 2402.14180): the adjusted evaluation loss of FULL, DIAG and
// GD++ linear transformers with L = 1..7 layers (21 rows) under ten noise set-ups (columns:
// sigma ~ U(0, sigma_max) for sigma_max = 0..7, and sigma uniform over {1,3} and {1,3,5}),
// trained by `rill repro-icl --experiments table1` and written side by side with the paper's
// values, the ratio per cell, the best of the seeds and every loss spike seen.
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "repro_icl_runs.hpp"
#include "rill/icl.hpp"

namespace rill_cli {

struct Table1Row {
  rill::icl::Parameterization param;
  int layers = 0;
};

struct Table1Column {
  std::string label;  // as the paper heads it: "0".."7", "{1,3}", "{1,3,5}"
  std::string name;   // as --columns takes it: "0".."7", "1+3", "1+3+5"
  rill::icl::NoiseKind noise;
  float sigma_max = 0.0f;
  std::vector<float> categories;
};

const std::vector<Table1Column>& table1_columns();

// The paper's adjusted loss of one cell (NeurIPS 2024 version, Appendix B, Table 1).
double table1_paper_value(rill::icl::Parameterization param, int layers, size_t column);

// --rows: "full", "diag", "gd++" (every depth), "full:3" or "diag:2-5"; empty: all 21 rows.
rill::Result<std::vector<Table1Row>> parse_table1_rows(const std::vector<std::string>& items);
// --columns: column names (see Table1Column::name); empty: all ten. Returns column indices.
rill::Result<std::vector<size_t>> parse_table1_columns(const std::vector<std::string>& items);

struct Table1Options {
  std::vector<Table1Row> rows;
  std::vector<size_t> columns;
  int64_t steps = 0;
  int seeds = 1;
  int eval_tasks = 0;
  int64_t checkpoint_every = 0;
  int retries = 2;  // a run whose loss spiked trains again at half the learning rate, this many times
};

// Trains every cell (rows x columns x seeds; resumable through `runs`) and appends the table to
// `md` and one line per run to `csv` (its own header first).
void run_table1(rill::Context& ctx, ReproRuns& runs, const Table1Options& options, std::ostringstream& md,
                std::ostringstream& csv);

}  // namespace rill_cli
