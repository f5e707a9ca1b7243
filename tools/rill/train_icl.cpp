// `rill train-icl`: trains in-context linear-regression transformers on the device (tasks made on
// the GPU, one recorded training step replayed), evaluates them against ridge baselines, and
// writes the curves as CSV and an SVG plot where asked (--out, --csv, --plot). rill's main job;
// the results (the table, the speed) go to stdout, the device, model and file lines to stderr.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "line_plot.hpp"
#include "output_paths.hpp"
#include "process.hpp"
#include "rill/rill.hpp"

namespace rill_cli {
namespace {

using namespace rill::icl;

struct Curve {
  std::string optimizer;
  std::vector<StepRecord> steps;
  std::vector<std::pair<int64_t, EvalReport>> evals;
};

rill::Result<TrainConfig> build_config(const TrainIclArgs& a) {
  TrainConfig c;
  if (a.setting == "ahn1") {
    c = ahn_setting(AhnSetting::k1);
  } else if (a.setting == "ahn2") {
    c = ahn_setting(AhnSetting::k2);
  } else if (a.setting == "ahn3") {
    c = ahn_setting(AhnSetting::k3);
  } else if (a.setting == "vladymyrov") {
    c = vladymyrov_setting(Parameterization::kFull, 1.0f);
  } else {
    return rill::invalid_argument("unknown --setting '" + a.setting + "' (ahn1, ahn2, ahn3, vladymyrov)");
  }
  if (a.d) c.task.d = *a.d;
  if (a.n) c.task.n = *a.n;
  if (a.layers) c.model.layers = *a.layers;
  if (a.heads) c.model.heads = *a.heads;
  if (a.param) {
    RILL_ASSIGN_OR_RETURN(c.model.param, parse_parameterization(*a.param));
  }
  if (a.convention) {
    if (*a.convention == "ahn") c.model.convention = Convention::kAhn;
    else if (*a.convention == "vladymyrov") c.model.convention = Convention::kVladymyrov;
    else return rill::invalid_argument("unknown --convention '" + *a.convention + "' (ahn, vladymyrov)");
  }
  if (a.data) {
    if (*a.data == "gaussian") c.task.data = DataKind::kGaussian;
    else if (*a.data == "heavy") c.task.data = DataKind::kHeavyTailed;
    else return rill::invalid_argument("unknown --data '" + *a.data + "' (gaussian, heavy)");
  }
  // Settings that would be ignored are refused: a run must be what its command line says.
  if ((a.gamma_shape || a.gamma_scale) && c.task.data != DataKind::kHeavyTailed)
    return rill::invalid_argument(
        "--gamma-shape and --gamma-scale shape heavy-tailed data; this run's is Gaussian "
        "(--data heavy, or the setting ahn3)");
  if (a.sigma_max && !a.sigmas.empty())
    return rill::invalid_argument(
        "--sigma-max and --sigmas both set the noise (uniform up to sigma_max, or one of "
        "the sigmas): give one");
  if (a.gamma_shape) c.task.gamma_shape = *a.gamma_shape;
  if (a.gamma_scale) c.task.gamma_scale = *a.gamma_scale;
  if (a.sigma_max) {
    c.task.noise = *a.sigma_max > 0 ? NoiseKind::kUniform : NoiseKind::kNone;
    c.task.sigma_max = *a.sigma_max;
  }
  if (!a.sigmas.empty()) {
    c.task.noise = NoiseKind::kCategorical;
    c.task.categories = a.sigmas;
  }
  if (a.lr) c.optimizer.lr = *a.lr;
  if (a.momentum) c.optimizer.momentum = *a.momentum;
  if (a.beta1) c.optimizer.beta1 = *a.beta1;
  if (a.beta2) c.optimizer.beta2 = *a.beta2;
  if (a.clip) c.optimizer.clip_norm = *a.clip;
  if (a.init_std) c.model.init_std = *a.init_std;
  if (a.batch) c.batch = *a.batch;
  c.seed = a.seed;
  c.read_every = a.read_every;
  if (a.on_nonfinite == "skip") c.on_nonfinite = NonFinitePolicy::kSkipBatch;
  else if (a.on_nonfinite != "stop") return rill::invalid_argument("unknown --on-nonfinite '" + a.on_nonfinite + "' (stop, skip)");
  RILL_RETURN_IF_ERROR(validate(c));
  return c;
}

// An --eval-file's tasks must have the model's d and n (else every evaluation, the first after
// many steps, would fail).
rill::Status check_eval_set(const std::optional<TaskSet>& set, const TaskConfig& task) {
  if (!set || (set->d == task.d && set->n == task.n)) return rill::Status::ok();
  return rill::invalid_argument("--eval-file: its tasks have d=" + std::to_string(set->d) +
                                ", n=" + std::to_string(set->n) + "; the model takes d=" + std::to_string(task.d) +
                                ", n=" + std::to_string(task.n));
}

void progress(const std::string& what, int64_t done, int64_t total, double seconds) {
  if (!stderr_is_terminal()) return;
  const int width = 30, filled = int(width * done / std::max<int64_t>(total, 1));
  std::fprintf(stderr, "\r%-6s [%s%s] %lld/%lld steps  %.1f s", what.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), (long long)done, (long long)total, seconds);
  if (done == total) std::fprintf(stderr, "\r%*s\r", 80, "");
  std::fflush(stderr);
}

double mean_loss(const std::vector<StepRecord>& r, size_t from) {
  double s = 0;
  for (size_t i = from; i < r.size(); ++i) s += r[i].loss;
  return r.size() > from ? s / double(r.size() - from) : NAN;
}

std::string csv_of(const std::vector<Curve>& curves) {
  std::ostringstream o;
  o.precision(8);
  o << "optimizer,step,train_loss,grad_norm,eval_loss,ridge_oracle,least_squares,adarr\n";
  for (const Curve& c : curves) {
    size_t e = 0;
    for (const StepRecord& r : c.steps) {
      o << c.optimizer << ',' << r.step << ',' << r.loss << ',' << r.grad_norm;
      if (e < c.evals.size() && c.evals[e].first == r.step + 1) {
        const EvalReport& ev = c.evals[e++].second;
        o << ',' << ev.model << ',' << ev.ridge_oracle << ',' << ev.least_squares << ',' << ev.adarr;
      } else {
        o << ",,,,";
      }
      o << '\n';
    }
  }
  return o.str();
}

// The curves of an earlier run, read back from its CSV (csv_of's format) so that a resumed run's
// curves go on from them rather than replace them. The file is untrusted: anything not in that
// format is refused with the line that is not.
rill::Result<std::vector<Curve>> read_curves(const std::string& path) {
  // Read whole through rill's reader (a regular file, bounded: a FIFO or a sparse 100 GB file
  // swapped in must not block or fill memory); a run of ten million steps writes about 1 GB.
  constexpr uint64_t kMaxCurvesBytes = 2ull << 30;
  auto bytes = rill::read_file(path, kMaxCurvesBytes);
  if (!bytes.is_ok()) return bytes.status().with_context("cannot read the curves '" + path + "'");
  std::istringstream in(std::string(bytes->begin(), bytes->end()));
  std::string line;
  const std::string header = "optimizer,step,train_loss,grad_norm,eval_loss,ridge_oracle,least_squares,adarr";
  if (!std::getline(in, line) || line != header)
    return rill::invalid_argument("'" + path + "' is not a curves file of rill train-icl (its first line is not '" +
                                  header + "')");
  std::vector<Curve> curves;
  for (int64_t number = 2; std::getline(in, line); ++number) {
    std::vector<std::string> f;
    for (size_t from = 0;;) {
      const size_t comma = line.find(',', from);
      f.push_back(line.substr(from, comma - from));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    auto number_in = [](const std::string& text, double& v) {
      char* end = nullptr;
      v = std::strtod(text.c_str(), &end);
      return !text.empty() && end == text.c_str() + text.size();
    };
    StepRecord r{};
    double step = 0, loss = 0, grad = 0;
    bool ok = f.size() == 8 && !f[0].empty() && number_in(f[1], step) && step >= 0 && step < 0x1p62 &&
              step == std::floor(step) && number_in(f[2], loss) && number_in(f[3], grad);
    EvalReport ev{};
    const bool evaluated = ok && !f[4].empty();
    if (evaluated)
      ok = number_in(f[4], ev.model) && number_in(f[5], ev.ridge_oracle) && number_in(f[6], ev.least_squares) &&
           number_in(f[7], ev.adarr);
    else if (ok)
      ok = f[5].empty() && f[6].empty() && f[7].empty();
    if (ok && !curves.empty() && curves.back().optimizer == f[0]) ok = int64_t(step) > curves.back().steps.back().step;
    if (!ok)
      return rill::invalid_argument("'" + path + "' line " + std::to_string(number) +
                                    " is not a row of rill train-icl's curves");
    if (curves.empty() || curves.back().optimizer != f[0]) curves.push_back(Curve{f[0], {}, {}});
    r.step = int64_t(step);
    r.loss = float(loss);
    r.grad_norm = float(grad);
    curves.back().steps.push_back(r);
    if (evaluated) curves.back().evals.emplace_back(r.step + 1, ev);
  }
  return curves;
}

}  // namespace

CLI::App* add_train_icl_command(CLI::App& app, TrainIclArgs& a) {
  auto* cmd = app.add_subcommand("train-icl",
                                 "Train in-context linear-regression transformers on the device (rill's main job)");
  cmd->add_option("--setting", a.setting, "Preset: ahn1 (d=5, n=20), ahn2 (n=5), ahn3 (heavy-tailed), vladymyrov (d=10, noisy)");
  cmd->add_option("--optimizers", a.optimizers, "Optimizers to train and compare: adam, sgd")
      ->delimiter(',')
      ->check(CLI::IsMember({"adam", "sgd"}));
  cmd->add_option("--steps", a.steps, "Training steps per optimizer")->check(CLI::Range(1, 10000000));
  cmd->add_option("--batch", a.batch, "Fresh tasks per step")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--d", a.d, "Input dimension")->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--n", a.n, "Context examples per task")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--layers", a.layers, "Layers L")->check(CLI::Range(1, 1024));
  cmd->add_option("--heads", a.heads, "Heads per layer")->check(CLI::Range(1, 1024));
  cmd->add_option("--param", a.param, "Parameterization: full, diag, gd++");
  cmd->add_option("--convention", a.convention, "ahn (s = 1/n, mean squared loss) or vladymyrov (s = 1, half)");
  cmd->add_option("--data", a.data, "Inputs: gaussian or heavy (sphere times sqrt(Gamma))");
  cmd->add_option("--gamma-shape", a.gamma_shape, "Heavy-tailed radius r2 ~ Gamma(shape, scale): shape")
      ->check(kFinitePositive);
  cmd->add_option("--gamma-scale", a.gamma_scale, "... and scale")->check(kFinitePositive);
  cmd->add_option("--sigma-max", a.sigma_max, "Label noise sigma ~ U(0, sigma-max) per task (0: none)")
      ->check(kFiniteNonNegative);
  cmd->add_option("--sigmas", a.sigmas, "Label noise sigma uniform over these values, e.g. 1,3,5")
      ->delimiter(',')
      ->check(kFiniteNonNegative);
  cmd->add_option("--lr", a.lr, "Learning rate (both optimizers)")->check(kFinitePositive);
  cmd->add_option("--sgd-lr", a.sgd_lr, "Learning rate of SGD only")->check(kFinitePositive);
  cmd->add_option("--momentum", a.momentum, "SGD momentum")->check(kFiniteNonNegative);
  cmd->add_option("--beta1", a.beta1, "Adam beta1")->check(kFiniteNonNegative);
  cmd->add_option("--beta2", a.beta2, "Adam beta2")->check(kFiniteNonNegative);
  cmd->add_option("--clip", a.clip, "Global gradient-norm clipping (<= 0: off)")->check(kFinite);
  cmd->add_option("--init-std", a.init_std, "Initial parameters ~ N(0, init-std^2)")->check(kFiniteNonNegative);
  cmd->add_option("--seed", a.seed, "Seed of the parameters and every training batch")->check(kSeed);
  cmd->add_option("--read-every", a.read_every, "Steps between host reads of the losses (nothing is read per step)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--on-nonfinite", a.on_nonfinite, "When a loss or gradient is not finite: stop or skip (the batch)");
  cmd->add_option("--eval-every", a.eval_every, "Steps between evaluations (0: 10 per run)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--eval-tasks", a.eval_tasks, "Fresh tasks per evaluation")->check(CLI::Range(1, 1000000));
  cmd->add_option("--train-tasks", a.train_tasks,
                  "Train on the tasks of this safetensors task set (cycling) instead of sampled ones; d and n follow it");
  cmd->add_option("--eval-file", a.eval_file, "Evaluate on the tasks of this task set (instead of fresh sampled tasks)")
      ->excludes(cmd->get_option("--eval-tasks"));
  cmd->add_option("--checkpoint", a.checkpoint,
                  "Save a checkpoint at the end (with several optimizers: one file each, PATH.<optimizer>)");
  cmd->add_option("--checkpoint-every", a.checkpoint_every,
                  "Also save the checkpoint every N steps (atomically: a killed run resumes from the last one)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_flag("--restart", a.restart,
                "Train afresh where --checkpoint names files of an earlier run (refused otherwise: --resume "
                "continues one)");
  cmd->add_option("--resume", a.resume,
                  "Continue the run saved in this checkpoint, with its settings (model, task and optimizer options "
                  "are refused; a run on --train-tasks needs the same set again); --steps more steps");
  cmd->add_option("--out", a.out,
                  "Write the curves to this folder (created if missing) as icl-curves.csv and icl-curves.svg; "
                  "without it, or --csv/--plot, no file is written");
  cmd->add_option("--csv", a.csv, "CSV of the curves (default: DIR/icl-curves.csv with --out, else none)");
  cmd->add_option("--plot", a.plot,
                  "SVG plot of loss against step (default: DIR/icl-curves.svg with --out, else none)");
  // A resumed run takes its settings from the checkpoint: options that would change them are refused
  // (silently ignoring them would train something other than what was asked for). A run trained on
  // --train-tasks trains on only with the same set (the checkpoint names it; another is refused).
  CLI::Option* resume = cmd->get_option("--resume");
  for (const char* name : {"--setting", "--batch",      "--d",      "--n",           "--layers",       "--heads",
                           "--param",   "--convention", "--data",   "--gamma-shape", "--gamma-scale",  "--sigma-max",
                           "--sigmas",  "--lr",         "--sgd-lr", "--momentum",    "--beta1",        "--beta2",
                           "--clip",    "--init-std",   "--seed",   "--optimizers",  "--on-nonfinite", "--read-every"})
    resume->excludes(cmd->get_option(name));
  // --restart only says what to do with --checkpoint's earlier files (a fresh run's, or another file
  // a resumed run is to replace): without --checkpoint it would do nothing.
  cmd->get_option("--restart")->needs(cmd->get_option("--checkpoint"));
  return cmd;
}

int run_train_icl(const TrainIclArgs& args_in) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill train-icl: %s\n", s.to_string().c_str());
    return 1;
  };
  TrainIclArgs a = args_in;
  // Everything that can be checked is checked before any work or output.
  for (size_t i = 0; i < a.optimizers.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (a.optimizers[i] == a.optimizers[j])
        return fail(rill::invalid_argument("--optimizers names '" + a.optimizers[i] + "' twice"));
  // An optimizer's settings where it does not run would be ignored.
  auto runs_optimizer = [&](const char* o) {
    return std::find(a.optimizers.begin(), a.optimizers.end(), o) != a.optimizers.end();
  };
  if (a.resume.empty() && !runs_optimizer("sgd") && (a.sgd_lr || a.momentum))
    return fail(rill::invalid_argument("--sgd-lr and --momentum set SGD, which --optimizers does not run"));
  if (a.resume.empty() && !runs_optimizer("adam") && (a.beta1 || a.beta2))
    return fail(rill::invalid_argument("--beta1 and --beta2 set Adam, which --optimizers does not run"));
  if (a.checkpoint_every > 0 && a.checkpoint.empty())
    return fail(rill::invalid_argument("--checkpoint-every needs --checkpoint PATH"));
  const size_t runs = a.resume.empty() ? a.optimizers.size() : 1;
  auto checkpoint_path = [&](const std::string& opt_name) {
    return runs > 1 ? a.checkpoint + "." + opt_name : a.checkpoint;
  };
  // The checkpoint resumed from is read with the device; that it is there is known before any output
  // (an --out folder, the table's header).
  if (std::error_code ec; !a.resume.empty() && !std::filesystem::is_regular_file(a.resume, ec))
    return fail(rill::not_found("--resume '" + a.resume +
                                "': " + (std::filesystem::exists(a.resume, ec) ? "not a file" : "no such file")));
  std::optional<TaskSet> train_set, eval_set;
  if (!a.train_tasks.empty()) {
    auto set = load_task_set(a.train_tasks);
    if (!set.is_ok()) return fail(set.status());
    train_set = std::move(set).value();
  }
  if (!a.eval_file.empty()) {
    auto set = load_task_set(a.eval_file);
    if (!set.is_ok()) return fail(set.status());
    eval_set = std::move(set).value();
  }
  TrainIclArgs args = a;
  if (train_set) {  // d and n follow the set: another value given would be dropped silently
    if (a.d && *a.d != train_set->d)
      return fail(rill::invalid_argument("--d " + std::to_string(*a.d) + " differs from the d = " +
                                         std::to_string(train_set->d) + " of --train-tasks (d and n follow it)"));
    if (a.n && *a.n != train_set->n)
      return fail(rill::invalid_argument("--n " + std::to_string(*a.n) + " differs from the n = " +
                                         std::to_string(train_set->n) + " of --train-tasks (d and n follow it)"));
    args.d = train_set->d, args.n = train_set->n;
  }
  auto config = build_config(args);
  if (!config.is_ok()) return fail(config.status());
  // A resumed model's shape is known once its checkpoint is read (checked there).
  if (a.resume.empty())
    if (auto s = check_eval_set(eval_set, config->task); !s.is_ok()) return fail(s);
  if (!a.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec) return fail(rill::invalid_argument("cannot create the output folder '" + a.out + "': " + ec.message()));
    if (a.csv.empty()) a.csv = a.out + "/icl-curves.csv";
    if (a.plot.empty()) a.plot = a.out + "/icl-curves.svg";
  }
  // Writing the checkpoint resumed from is how a run keeps going; the task sets must survive.
  std::vector<NamedPath> outputs = {{"--csv", a.csv}, {"--plot", a.plot}};
  if (!a.checkpoint.empty())
    for (const std::string& o : a.resume.empty() ? a.optimizers : std::vector<std::string>{"resumed"})
      outputs.push_back({"--checkpoint", checkpoint_path(o)});
  if (auto s = check_files(outputs, {{"--train-tasks", a.train_tasks}, {"--eval-file", a.eval_file}}); !s.is_ok())
    return fail(s);
  // The checkpoint may be the one resumed from; the curves may not.
  if (auto s = check_files({{"--csv", a.csv}, {"--plot", a.plot}}, {{"--resume", a.resume}}); !s.is_ok())
    return fail(s);
  // A checkpoint of an earlier run is replaced at the first save only when asked: running a long
  // run's command again without --resume would otherwise start it over and lose it.
  for (const auto& [option, path] : outputs) {
    std::error_code ec;
    if (option != std::string("--checkpoint") || a.restart || !std::filesystem::exists(path, ec)) continue;
    if (!a.resume.empty() && std::filesystem::equivalent(path, a.resume, ec)) continue;  // how a run goes on
    return fail(rill::failed_precondition(
        "--checkpoint '" + path + "' holds an earlier run: " +
        (a.resume.empty() ? "--resume '" + path + "' continues it, --restart trains afresh over it"
                          : std::string("--restart replaces it with this one, or choose another path"))));
  }
  // The earlier curves a resumed run goes on from (every optimizer's: a run of adam and sgd keeps
  // the other's curve in the file too).
  std::vector<Curve> curves;
  if (std::error_code ec; !a.resume.empty() && !a.csv.empty() && std::filesystem::exists(a.csv, ec)) {
    auto earlier = read_curves(a.csv);
    if (!earlier.is_ok())
      return fail(
          earlier.status().with_context("--resume goes on with the curves in --csv; choose another --csv "
                                        "or --out for this run's"));
    curves = std::move(earlier).value();
  }
  if (!a.resume.empty() && a.checkpoint.empty())
    std::fprintf(stderr, "note: without --checkpoint the resumed model's further training is not saved\n");
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  const TrainConfig& base = config.value();
  std::fprintf(stderr, "device: %s\n", ctx->device().name.c_str());
  auto print_model = [&](const TrainConfig& c) {
    std::fprintf(stderr, "model: %s, d=%d n=%d L=%d heads=%d, %lld parameters; batch %d, %lld steps per optimizer\n",
                 std::string(name(c.model.param)).c_str(), c.task.d, c.task.n, c.model.layers, c.model.heads,
                 (long long)parameter_count(c.model, c.task.d), c.batch, (long long)a.steps);
  };
  if (a.resume.empty()) print_model(base);  // a resumed run prints the checkpoint's model below

  const int64_t eval_every = a.eval_every > 0 ? a.eval_every : std::max<int64_t>(1, a.steps / 10);
  EvalReport last{};
  std::vector<std::string> diverged;  // optimizers whose run ended with a non-finite evaluation
  std::printf("\n%-9s %8s %12s %12s %12s %12s\n", "optimizer", "step", "train loss", "eval loss", "ridge oracle",
              "least sq.");
  const std::vector<std::string> optimizers =
      a.resume.empty() ? a.optimizers : std::vector<std::string>{"resumed"};
  TrainConfig plotted = base;  // the model the plot's title names (a resumed run's is the checkpoint's)
  // The curves so far, as CSV and plot (each file atomically): at every periodic checkpoint, so a
  // killed run keeps the curves up to its last one, and at the end.
  auto write_curves = [&](bool say) -> rill::Status {
    std::string error;
    if (!a.csv.empty()) {
      if (!write_text_atomic(a.csv, csv_of(curves), &error)) return rill::invalid_argument(error);
      if (say) std::fprintf(stderr, "curves: %s\n", a.csv.c_str());
    }
    if (!a.plot.empty()) {
      PlotSpec plot{"In-context linear regression (d=" + std::to_string(plotted.task.d) +
                        ", n=" + std::to_string(plotted.task.n) + ", L=" + std::to_string(plotted.model.layers) + ")",
                    "training step",
                    "loss",
                    {},
                    {}};
      for (const Curve& c : curves) {
        PlotSeries train{c.optimizer + " train", {}, false}, eval{c.optimizer + " eval", {}, true};
        const size_t stride = std::max<size_t>(1, c.steps.size() / 400);
        for (size_t i = 0; i < c.steps.size(); i += stride)
          train.points.emplace_back(double(c.steps[i].step + 1), c.steps[i].loss);
        for (const auto& [step, ev] : c.evals) eval.points.emplace_back(double(step), ev.model);
        plot.series.push_back(std::move(train));
        plot.series.push_back(std::move(eval));
      }
      if (last.tasks > 0) plot.baselines = {{"ridge oracle", last.ridge_oracle}, {"least squares", last.least_squares}};
      if (!write_text_atomic(a.plot, line_plot_svg(plot), &error)) return rill::invalid_argument(error);
      if (say) std::fprintf(stderr, "plot: %s\n", a.plot.c_str());
    }
    return rill::Status::ok();
  };
  // One optimizer's run; its curve so far is kept whether it ends or fails.
  auto train_one = [&](const std::string& opt_name) -> rill::Status {
    TrainConfig c = base;
    rill::Result<Trainer> trainer = rill::invalid_argument("no trainer");
    if (a.resume.empty()) {
      RILL_ASSIGN_OR_RETURN(const OptimizerKind kind, parse_optimizer(opt_name));
      c.optimizer.kind = kind;
      if (kind == OptimizerKind::kSgd && a.sgd_lr) c.optimizer.lr = *a.sgd_lr;
      trainer = Trainer::create(ctx.value(), c, train_set ? &*train_set : nullptr);
    } else {
      trainer = Trainer::resume(ctx.value(), a.resume, train_set ? &*train_set : nullptr);
      if (trainer.is_ok()) {
        std::fprintf(stderr, "resumed %s at step %lld\n", a.resume.c_str(), (long long)trainer->step());
        print_model(trainer->config());
        RILL_RETURN_IF_ERROR(check_eval_set(eval_set, trainer->config().task));
      }
    }
    RILL_RETURN_IF_ERROR(trainer.status());
    c = trainer->config();
    plotted = c;
    // A resumed run goes on with its optimizer's curve from the earlier CSV, cut at the checkpoint's
    // step (rows past it were trained after that save and are trained again now).
    const std::string label = a.resume.empty() ? opt_name : std::string(name(c.optimizer.kind));
    auto earlier = std::find_if(curves.begin(), curves.end(), [&](const Curve& k) { return k.optimizer == label; });
    const bool continued = earlier != curves.end();
    if (continued)
      std::rotate(earlier, earlier + 1, curves.end());
    else
      curves.push_back(Curve{label, {}, {}});
    Curve& curve = curves.back();
    std::erase_if(curve.steps, [&](const StepRecord& r) { return r.step >= trainer->step(); });
    std::erase_if(curve.evals, [&](const auto& e) { return e.first > trainer->step(); });
    // The curves are written at a checkpoint once they have grown by a quarter: a run killed after
    // a save they skipped left them short of the checkpoint's step. Said, not hidden.
    if (continued && !curve.steps.empty() && curve.steps.back().step + 1 < trainer->step())
      std::fprintf(stderr,
                   "note: the curves in %s end at step %lld and the checkpoint is at step %lld: the steps between "
                   "are missing from them\n",
                   a.csv.c_str(), (long long)curve.steps.back().step, (long long)trainer->step());
    size_t eval_from = curve.steps.size();  // the train loss printed with an evaluation is the mean since the last one
    const auto start = std::chrono::steady_clock::now();
    double train_seconds = 0;
    if (stderr_is_terminal()) {  // the first step builds the pipelines: seconds, minutes for big unrolled models
      std::fprintf(stderr, "%s: preparing kernels (slow only the first time on a device)...", opt_name.c_str());
      std::fflush(stderr);
    }
    // Train up to the next evaluation or checkpoint, whichever comes first.
    const int64_t never = std::numeric_limits<int64_t>::max();
    int64_t next_eval = eval_every, next_save = a.checkpoint_every > 0 ? a.checkpoint_every : never;
    size_t curves_written = curve.steps.size();  // this curve's rows at the last periodic write
    for (int64_t done = 0; done < a.steps;) {
      const int64_t chunk = std::min({next_eval, next_save, a.steps}) - done;
      const auto t0 = std::chrono::steady_clock::now();
      // Up to a halt, its step's record included: the curves written after a failure show them.
      const rill::Status trained = trainer->train_into(chunk, curve.steps);
      train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      RILL_RETURN_IF_ERROR(trained);
      done += chunk;
      if (done == next_save) {
        RILL_RETURN_IF_ERROR(trainer->save_checkpoint(checkpoint_path(opt_name)));
        // The curves so far, once they have grown by a quarter (each write is the whole CSV: at every
        // save a long run's writes would grow with the square of its length). A failed write is
        // reported; the training goes on (the final write reports it again).
        const size_t rows = curve.steps.size();
        if (rows >= curves_written + curves_written / 4) {
          if (const rill::Status w = write_curves(false); !w.is_ok())
            std::fprintf(stderr, "note: curves not written at step %lld: %s\n", (long long)done, w.message().c_str());
          curves_written = rows;
        }
        next_save += a.checkpoint_every;
      }
      if (done != next_eval && done != a.steps) continue;
      next_eval += eval_every;
      rill::Result<EvalReport> eval = rill::invalid_argument("no evaluation");
      if (eval_set) {
        auto run = trainer->run_on(*eval_set);
        eval = run.is_ok() ? rill::Result<EvalReport>(run->report) : rill::Result<EvalReport>(run.status());
      } else {
        eval = trainer->evaluate({.tasks = a.eval_tasks});
      }
      RILL_RETURN_IF_ERROR(eval.status());
      curve.evals.emplace_back(trainer->step(), *eval);
      last = *eval;
      progress(opt_name, done, a.steps, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      std::printf("%-9s %8lld %12.5g %12.5g %12.5g %12.5g\n", opt_name.c_str(), (long long)trainer->step(),
                  mean_loss(curve.steps, eval_from), eval->model, eval->ridge_oracle, eval->least_squares);
      eval_from = curve.steps.size();
      std::fflush(stdout);
    }
    std::printf("%-9s %.1f steps/s, %.0f tasks/s (training only)\n", opt_name.c_str(), double(a.steps) / train_seconds,
                double(a.steps) * c.batch / train_seconds);
    // --on-nonfinite skip goes on past batches it cannot use; a model that ends unusable is a
    // failed run, said so and in the exit status (its checkpoint is still written, as asked).
    if (trainer->skipped_batches() > 0)
      std::fprintf(stderr, "%s: %lld of %lld batches skipped (a loss or gradient was not finite)\n", opt_name.c_str(),
                   (long long)trainer->skipped_batches(), (long long)trainer->step());
    if (!std::isfinite(last.model)) diverged.push_back(opt_name);
    if (!a.checkpoint.empty()) {
      const std::string path = checkpoint_path(opt_name);
      RILL_RETURN_IF_ERROR(trainer->save_checkpoint(path));
      std::fprintf(stderr, "checkpoint: %s\n", path.c_str());
    }
    return rill::Status::ok();
  };
  rill::Status failed = rill::Status::ok();
  for (const std::string& opt_name : optimizers) {
    failed = train_one(opt_name);
    if (!failed.is_ok()) {
      failed = failed.with_context(opt_name);
      break;
    }
  }
  // A failed run still writes the curves trained so far (every optimizer's before it, and its own).
  if (!failed.is_ok() && curves.empty()) return fail(failed);

  if (auto written = write_curves(true); !written.is_ok()) {
    if (!failed.is_ok()) fail(failed);  // why training stopped, before why its curves are not saved
    return fail(written);
  }
  if (!failed.is_ok()) return fail(failed);
  for (const std::string& name : diverged)
    std::fprintf(stderr,
                 "rill train-icl: %s ended with an evaluation loss that is not finite: lower --lr or --init-std\n",
                 name.c_str());
  return diverged.empty() ? 0 : 1;
}

}  // namespace rill_cli
