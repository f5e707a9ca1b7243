// Subcommands of the `rill` tool; each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rill_cli {

struct InfoArgs {
  bool json = false;
};
int run_info(const InfoArgs& args);

struct DemoArgs {
  uint32_t elements = 1u << 20;
  uint32_t replays = 100;
};
int run_demo(const DemoArgs& args);

struct BenchArgs {
  std::string ops = "peaks,dispatch,pipeline";
  bool quick = false;
};
int run_bench(const BenchArgs& args);

struct ProfileArgs {
  std::string trace = "rill-trace.json";
  std::string roofline;  // SVG path; empty: none
  bool quick_peaks = false;
  std::vector<std::string> command;  // the rill subcommand and its arguments
};
int run_profile(const ProfileArgs& args);

}  // namespace rill_cli
