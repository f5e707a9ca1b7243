// Subcommands of the `rill` tool; each returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lm_model_args.hpp"

namespace CLI {
class App;
}

namespace rill_cli {

struct InfoArgs {
  bool json = false;
  std::string profile;      // a limit profile to apply to every device (also RILL_LIMIT_PROFILE)
  std::string kernel_plan;  // forced plan choices, as a context takes them (also RILL_KERNEL_PLAN)
  std::string tuning;       // a tuning file, as a context takes it (also RILL_TUNING)
  bool plan_keys = false;   // list the choices a plan can force instead of the devices
};
CLI::App* add_info_command(CLI::App& app, InfoArgs& args);
int run_info(const InfoArgs& args);

struct DemoArgs {
  uint32_t elements = 1u << 20;
  uint32_t replays = 100;
};
CLI::App* add_demo_command(CLI::App& app, DemoArgs& args);
int run_demo(const DemoArgs& args);

struct BenchArgs {
  std::string ops = "peaks,dispatch,pipeline";
  bool quick = false;
  bool no_torch = false;  // icl: skip the PyTorch-CPU baseline
  bool peers = false;     // kernels: time the PyTorch peer of each record in the same run
  std::string lm_config;  // lm: model config JSON; empty: the default (width 256, 8 heads, 6 layers)
  uint64_t lm_max_tokens = 1 << 20;  // lm: longest prompt to time
  std::string lm_weight_storage = "precision";  // lm: the linear layers' weights (precision, f16, int8)
  std::string lm_precision = "f32";             // lm: activations and weights, f32 or f16
  uint32_t lm_segment = 0;                      // lm: prefill segment (0: the model's default)
  bool lm_no_baseline = false;                  // lm: skip the softmax-attention baseline
  std::string la_forms;  // linear_attention: the forms to time (comma-separated); empty: every form
  std::string matmul_shapes;  // matmul: MxNxK products to time (comma-separated); empty: the bench's own
  std::set<std::string> given;  // the options the command line gave ("--lm-config", ...)
};
CLI::App* add_bench_command(CLI::App& app, BenchArgs& args);
int run_bench(const BenchArgs& args);

struct TuneArgs {
  std::string out = "rill-tuning.json";
  std::string jobs = "lm,icl";
  bool quick = false;
  std::string lm_config;                   // empty: the default model
  std::string icl_setting = "vladymyrov";  // ahn1 or vladymyrov
  std::string family;                      // cpu or gpu; empty: the device's own
  std::set<std::string> given;             // the options the command line gave
};
CLI::App* add_tune_command(CLI::App& app, TuneArgs& args);
int run_tune(const TuneArgs& args);

struct ProfileArgs {
  std::string trace = "rill-trace.json";
  std::string roofline;  // SVG path; empty: none
  bool quick_peaks = false;
  std::vector<std::string> command;  // the rill subcommand and its arguments
};
CLI::App* add_profile_command(CLI::App& app, ProfileArgs& args);
int run_profile(const ProfileArgs& args);

// Unset options keep the preset's value.
struct TrainIclArgs {
  std::string setting = "ahn1";
  std::vector<std::string> optimizers = {"adam", "sgd"};
  int64_t steps = 1000;
  std::optional<int> batch, d, n, layers, heads;
  std::optional<std::string> param, convention, data;
  std::optional<float> gamma_shape, gamma_scale, sigma_max, lr, sgd_lr, momentum, beta1, beta2, clip, init_std;
  std::vector<float> sigmas;
  uint64_t seed = 1;
  int read_every = 50;
  std::string on_nonfinite = "stop";
  int64_t eval_every = 0;
  int eval_tasks = 1000;
  std::string checkpoint, resume, train_tasks, eval_file;
  int64_t checkpoint_every = 0;  // 0: only at the end
  bool restart = false;          // train afresh over existing --checkpoint files
  std::string out;               // a folder for icl-curves.csv and icl-curves.svg
  std::string csv, plot;
};
CLI::App* add_train_icl_command(CLI::App& app, TrainIclArgs& args);
int run_train_icl(const TrainIclArgs& args);

struct ReproIclArgs {
  std::string out = "repro-icl";
  std::optional<int64_t> steps, vlad_steps;  // unset: 1000 and 600, or 150 with --quick
  std::optional<int64_t> table1_steps;       // unset: 200,000 with --full, else 1000 (150 with --quick)
  std::optional<int> seeds;                  // Table 1's seeds per cell: 5 with --full, else 1
  std::vector<std::string> rows, columns;    // Table 1's subset (empty: --full's all, else a small one)
  bool quick = false, full = false;
  int64_t checkpoint_every = 0;  // 0: no periodic checkpoints
  bool resume = false, restart = false;
  std::vector<std::string> experiments;  // empty: adam-vs-sgd and adjusted-vs-depth (--full: table1 for the latter)
};
CLI::App* add_repro_icl_command(CLI::App& app, ReproIclArgs& args);
int run_repro_icl(const ReproIclArgs& args);

struct IclExportArgs {
  std::string checkpoint, tasks, out;
};
CLI::App* add_icl_export_command(CLI::App& app, IclExportArgs& args);
int run_icl_export(const IclExportArgs& args);

struct IclTasksArgs {
  std::string checkpoint, out;
  int tasks = 1000;
  uint64_t seed = 1;
};
CLI::App* add_icl_tasks_command(CLI::App& app, IclTasksArgs& args);
int run_icl_tasks(const IclTasksArgs& args);

struct IclDiagnoseArgs {
  std::string checkpoint;
  int batches = 64;
  int reference_tasks = 2048;
};
CLI::App* add_icl_diagnose_command(CLI::App& app, IclDiagnoseArgs& args);
int run_icl_diagnose(const IclDiagnoseArgs& args);

// `rill generate`: a TransNormer language model (loaded, or random weights) continues a prompt.
struct GenerateArgs : LmModelArgs {
  bool bos = false;  // start the prompt with the tokenizer's beginning-of-sequence token
  std::optional<std::string> prompt;
  std::string prompt_file;  // "-": stdin
  int64_t tokens = 64;
  float temperature = 1.0f;
  uint32_t top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  std::string save_state, load_state;
  int64_t save_state_every = 0;           // also save the state every N generated tokens (0: at the end)
  std::string save_config, save_weights;  // write the model used (with --random: to check it elsewhere)
  std::string export_logits;              // tokens and the logits after the prompt and each token
  bool json = false;
};
CLI::App* add_generate_command(CLI::App& app, GenerateArgs& args);
int run_generate(const GenerateArgs& args);

struct ScoreArgs : LmModelArgs {
  bool bos = false;  // start the text with the tokenizer's beginning-of-sequence token
  std::optional<std::string> text;
  std::string text_file;    // "-": stdin
  uint64_t max_tokens = 0;  // score at most this many tokens of the text (0: all)
  bool per_token = false;   // also print each token's log-probability
};
CLI::App* add_score_command(CLI::App& app, ScoreArgs& args);
int run_score(const ScoreArgs& args);

}  // namespace rill_cli
