// `rill`: the command-line face of the engine. Each subcommand registers its options
// (add_*_command) and runs (run_*) in its own file; this file only assembles and dispatches them.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "rill/status.hpp"
#include "rill/version.hpp"
#include "suggest.hpp"

namespace {

struct Command {
  CLI::App* parsed;
  std::function<int()> run;
};

// A command that succeeded but whose output did not reach stdout (a closed pipe, a full disk)
// failed: what it printed is its result (icl-diagnose's JSON, icl-export's tasks, a table). A
// command that failed has said why already.
int with_output_checked(int code) {
  if (code != 0 || (std::fflush(stdout) == 0 && !std::ferror(stdout))) return code;
  std::fprintf(stderr, "rill: the output could not be written to stdout (a closed pipe, a full disk)\n");
  return 1;
}

// An option given an empty value ("--resume \"$UNSET\"") is refused, not read as the option left
// out: a run would start afresh instead of resuming, or save nothing and exit 0. Only a prompt or a
// text may be empty.
bool refuses_empty_values(const CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    if (!option->nonpositional() || option->get_expected_max() == 0 || option->count() == 0) continue;
    const std::string name = option->get_name();
    if (name == "--prompt" || name == "--text") continue;
    for (const std::string& value : option->results()) {
      if (!value.empty()) continue;
      std::fprintf(stderr, "rill %s: %s is given an empty value; give one, or leave the option out\n",
                   command.get_name().c_str(), name.c_str());
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rill_cli;
  CLI::App app{"rill " RILL_VERSION_STRING " - embeddable Vulkan compute engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RILL_VERSION_STRING);
  app.option_defaults()->always_capture_default();  // --help shows each option's default
  bool verbose = false;
  app.add_flag("--verbose", verbose, "Errors name the line of rill's source that raised them");
  app.fallthrough();  // --verbose after the command too

  // Arguments live here, for as long as the parse and the run that read them.
  InfoArgs info;
  DemoArgs demo;
  BenchArgs bench;
  ProfileArgs profile;
  TrainIclArgs train_icl;
  ReproIclArgs repro_icl;
  IclExportArgs icl_export;
  IclTasksArgs icl_tasks;
  IclDiagnoseArgs icl_diagnose;
  GenerateArgs generate;
  ScoreArgs score;
  TuneArgs tune;
  CLI::App* profile_cmd = nullptr;
  const std::vector<Command> commands = {
      {add_info_command(app, info), [&] { return run_info(info); }},
      {add_demo_command(app, demo), [&] { return run_demo(demo); }},
      {add_bench_command(app, bench), [&] { return run_bench(bench); }},
      {profile_cmd = add_profile_command(app, profile), [&] { return run_profile(profile); }},
      {add_train_icl_command(app, train_icl), [&] { return run_train_icl(train_icl); }},
      {add_repro_icl_command(app, repro_icl), [&] { return run_repro_icl(repro_icl); }},
      {add_icl_export_command(app, icl_export), [&] { return run_icl_export(icl_export); }},
      {add_icl_tasks_command(app, icl_tasks), [&] { return run_icl_tasks(icl_tasks); }},
      {add_icl_diagnose_command(app, icl_diagnose), [&] { return run_icl_diagnose(icl_diagnose); }},
      {add_generate_command(app, generate), [&] { return run_generate(generate); }},
      {add_score_command(app, score), [&] { return run_score(score); }},
      {add_tune_command(app, tune), [&] { return run_tune(tune); }},
  };

  if (argc > 1 && argv[1][0] != '-' && !known_command(app, argv[1], "")) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) suggest_options(app, argc, argv);
    return app.exit(e);
  }
  if (verbose) rill::set_status_locations(true);
  for (const Command& c : commands)
    if (c.parsed->parsed() && refuses_empty_values(*c.parsed)) return 2;
  if (profile_cmd->parsed() && !profile.command.empty()) {
    if (profile.command[0] == "profile") {
      std::fprintf(stderr, "rill profile: profile a command other than profile itself\n");
      return 2;
    }
    if (!known_command(app, profile.command[0], " profile")) return 2;
    // The profiled command's errors name their source lines too.
    if (verbose) profile.command.insert(profile.command.begin(), "--verbose");
  }
  // The commands report errors as statuses; anything thrown past them (a file system call, host
  // memory) still ends with a message and status 1, not an abort.
  try {
    for (const Command& c : commands)
      if (c.parsed->parsed()) return with_output_checked(c.run());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "rill: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill: %s\n", e.what());
    return 1;
  }
  return 2;
}
