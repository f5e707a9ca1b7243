// `rill`: the command-line face of the engine (device info, demo, benchmarks).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "rill/device.hpp"
#include "rill/status.hpp"
#include "rill/version.hpp"
#include "suggest.hpp"

namespace {

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// An unknown command names itself and the closest known one, before CLI11's generic message.
bool known_command(CLI::App& app, const std::string& name, const char* context) {
  const std::vector<std::string> names = command_names(app);
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  const std::string guess = rill_cli::closest(name, names);
  std::fprintf(stderr, "rill%s: unknown command '%s'%s (commands: %s)\n", context, name.c_str(),
               guess.empty() ? "" : ("; did you mean '" + guess + "'?").c_str(), joined(names).c_str());
  return false;
}

// CLI11 names an unexpected argument; add the closest option of the command it was given to.
void suggest_options(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> options;
  for (CLI::App* sub : app.get_subcommands())
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& n : o->get_lnames()) options.push_back("--" + n);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(options.begin(), options.end(), name) != options.end()) continue;
    const std::string guess = rill_cli::closest(name, options);
    if (!guess.empty()) std::fprintf(stderr, "unknown option '%s'; did you mean '%s'?\n", name.c_str(), guess.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rill " RILL_VERSION_STRING " - embeddable Vulkan compute engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RILL_VERSION_STRING);
  app.option_defaults()->always_capture_default();  // --help shows each option's default
  bool verbose = false;
  app.add_flag("--verbose", verbose, "Errors name the line of rill's source that raised them");
  app.fallthrough();  // --verbose after the command too

  rill_cli::InfoArgs info;
  auto* info_cmd = app.add_subcommand("info", "List Vulkan devices, which one rill picks and why, and their capabilities");
  info_cmd->add_flag("--json", info.json, "Print JSON instead of text");
  std::vector<std::string> profile_names;
  for (const auto& p : rill::limit_profiles()) profile_names.push_back(p.name);
  info_cmd->add_option("--profile", info.profile,
                       "Show each device as a limit profile would make it, and the kernels rill would pick then")
      ->check(CLI::IsMember(profile_names))
      ->envname("RILL_LIMIT_PROFILE");

  rill_cli::DemoArgs demo;
  auto* demo_cmd = app.add_subcommand("demo", "Run a small computation on the device and check it against the CPU");
  demo_cmd->add_option("--elements", demo.elements, "Vector length")->check(CLI::Range(1u, 1u << 28));
  demo_cmd->add_option("--replays", demo.replays, "Times the recorded sequence is replayed")->check(CLI::Range(1u, 1u << 20));

  rill_cli::BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "Benchmarks; prints JSON");
  bench_cmd->add_option("--op", bench.ops, "Comma-separated: peaks, dispatch, pipeline, rmsnorm, matmul, linear_attention, block_attention, icl, lm; or all");
  bench_cmd->add_flag("--quick", bench.quick, "Fewer repetitions (under a minute)");
  bench_cmd->add_flag("--no-torch", bench.no_torch, "icl: do not time the PyTorch-CPU baseline");
  bench_cmd->add_flag("--peers", bench.peers,
                      "time the same work in PyTorch in this run (CUDA when it sees a GPU, else the CPU) and add "
                      "peer_ms and speedup_vs_peer to each kernel record (needs python3-torch)");
  bench_cmd->add_option("--lm-config", bench.lm_config, "lm: model config JSON (default: width 256, 8 heads, 6 layers)");
  bench_cmd->add_option("--lm-max-tokens", bench.lm_max_tokens, "lm: longest prompt to time (default 1048576)");
  bench_cmd
      ->add_option("--lm-weight-storage", bench.lm_weight_storage,
                   "lm: the linear layers' weights: precision (f32), f16 or int8")
      ->check(CLI::IsMember({"precision", "f16", "int8"}));
  bench_cmd->add_option("--lm-segment", bench.lm_segment, "lm: prefill segment length (0: the model's default)");
  bench_cmd->add_flag("--lm-no-baseline", bench.lm_no_baseline,
                      "lm: skip the softmax-attention baseline (a large config's quadratic baseline takes hours)");

  rill_cli::ProfileArgs profile;
  auto* profile_cmd = app.add_subcommand(
      "profile", "Run a rill subcommand with profiling: Chrome trace, per-kernel summary, roofline");
  profile_cmd->add_option("--trace", profile.trace, "Chrome trace-event JSON to write");
  profile_cmd->add_option("--roofline", profile.roofline, "Roofline plot (SVG) to write");
  profile_cmd->add_flag("--quick-peaks", profile.quick_peaks, "Measure device peaks quickly if not cached");
  profile_cmd->add_option("command", profile.command, "The subcommand to profile, after --, e.g. -- demo --replays 10");

  rill_cli::TrainIclArgs train_icl;
  auto* train_icl_cmd = rill_cli::add_train_icl_command(app, train_icl);

  rill_cli::ReproIclArgs repro_icl;
  auto* repro_icl_cmd = rill_cli::add_repro_icl_command(app, repro_icl);

  rill_cli::IclExportArgs icl_export;
  auto* icl_export_cmd = rill_cli::add_icl_export_command(app, icl_export);

  rill_cli::IclTasksArgs icl_tasks;
  auto* icl_tasks_cmd = rill_cli::add_icl_tasks_command(app, icl_tasks);
  rill_cli::IclDiagnoseArgs icl_diagnose;
  auto* icl_diagnose_cmd = rill_cli::add_icl_diagnose_command(app, icl_diagnose);

  rill_cli::GenerateArgs generate;
  auto* generate_cmd = rill_cli::add_generate_command(app, generate);

  if (argc > 1 && argv[1][0] != '-' && !known_command(app, argv[1], "")) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) suggest_options(app, argc, argv);
    return app.exit(e);
  }
  if (verbose) rill::set_status_locations(true);
  if (profile_cmd->parsed() && !profile.command.empty()) {
    if (profile.command[0] == "profile") {
      std::fprintf(stderr, "rill profile: profile a command other than profile itself\n");
      return 2;
    }
    if (!known_command(app, profile.command[0], " profile")) return 2;
  }
  if (generate_cmd->parsed()) return rill_cli::run_generate(generate);
  if (icl_tasks_cmd->parsed()) return rill_cli::run_icl_tasks(icl_tasks);
  if (icl_diagnose_cmd->parsed()) return rill_cli::run_icl_diagnose(icl_diagnose);
  if (icl_export_cmd->parsed()) return rill_cli::run_icl_export(icl_export);
  if (repro_icl_cmd->parsed()) return rill_cli::run_repro_icl(repro_icl);
  if (train_icl_cmd->parsed()) return rill_cli::run_train_icl(train_icl);
  if (profile_cmd->parsed()) return rill_cli::run_profile(profile);
  if (info_cmd->parsed()) return rill_cli::run_info(info);
  if (demo_cmd->parsed()) return rill_cli::run_demo(demo);
  if (bench_cmd->parsed()) return rill_cli::run_bench(bench);
  return 2;
}
