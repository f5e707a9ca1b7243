// `rill`: the command-line face of the engine (device info, demo, benchmarks).
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "rill/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"rill " RILL_VERSION_STRING " - embeddable Vulkan compute engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RILL_VERSION_STRING);

  rill_cli::InfoArgs info;
  auto* info_cmd = app.add_subcommand("info", "List Vulkan devices, which one rill picks and why, and their capabilities");
  info_cmd->add_flag("--json", info.json, "Print JSON instead of text");

  rill_cli::DemoArgs demo;
  auto* demo_cmd = app.add_subcommand("demo", "Run a small computation on the device and check it against the CPU");
  demo_cmd->add_option("--elements", demo.elements, "Vector length")->check(CLI::Range(1u, 1u << 28));
  demo_cmd->add_option("--replays", demo.replays, "Times the recorded sequence is replayed")->check(CLI::Range(1u, 1u << 20));

  rill_cli::BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "Benchmarks; prints JSON");
  bench_cmd->add_option("--op", bench.ops, "Comma-separated: dispatch, pipeline");
  bench_cmd->add_flag("--quick", bench.quick, "Fewer repetitions (under a minute)");

  CLI11_PARSE(app, argc, argv);
  if (info_cmd->parsed()) return rill_cli::run_info(info);
  if (demo_cmd->parsed()) return rill_cli::run_demo(demo);
  if (bench_cmd->parsed()) return rill_cli::run_bench(bench);
  return 2;
}
