// Subcommands of the `rill` tool; each returns the process exit code.
#pragma once

#include <string>

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
  std::string ops = "dispatch,pipeline";
  bool quick = false;
};
int run_bench(const BenchArgs& args);

}  // namespace rill_cli
