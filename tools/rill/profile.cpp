// `rill profile -- <subcommand ...>`: runs any rill subcommand with RILL_PROFILE set, then prints
// the per-kernel summary against the device's measured peaks and optionally draws the roofline.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "commands.hpp"
#include "process.hpp"
#include "rill/rill.hpp"

namespace rill_cli {
namespace {

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

CLI::App* add_profile_command(CLI::App& app, ProfileArgs& a) {
  auto* cmd =
      app.add_subcommand("profile", "Run a rill subcommand with profiling: Chrome trace, per-kernel summary, roofline");
  cmd->add_option("--trace", a.trace, "Chrome trace-event JSON to write");
  cmd->add_option("--roofline", a.roofline, "Roofline plot (SVG) to write");
  cmd->add_flag("--quick-peaks", a.quick_peaks, "Measure device peaks quickly if not cached");
  cmd->add_option("command", a.command, "The subcommand to profile, after --, e.g. -- demo --replays 10");
  return cmd;
}

int run_profile(const ProfileArgs& args) {
  if (args.command.empty()) {
    std::fprintf(stderr, "rill profile: give the subcommand to profile after --, e.g. rill profile -- demo\n");
    return 2;
  }
  if (auto s = rill::check_writable(args.trace); !s.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", s.to_string().c_str());
    return 2;
  }
  // A trace left by an earlier run must not pass for this one's.
  std::remove(args.trace.c_str());
  // Peaks first, in this process: cached per device, measured once.
  rill::DevicePeaks peaks;
  {
    auto ctx = rill::Context::create();
    if (!ctx.is_ok()) {
      std::fprintf(stderr, "rill profile: %s\n", ctx.status().to_string().c_str());
      return 1;
    }
    auto p = rill::device_peaks(ctx.value(), {.quick = args.quick_peaks});
    if (!p.is_ok()) {
      std::fprintf(stderr, "rill profile: measuring device peaks: %s\n", p.status().to_string().c_str());
      return 1;
    }
    peaks = p.value();
  }
  const auto child = run_self(args.command, "RILL_PROFILE", args.trace);
  if (!child.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", child.status().to_string().c_str());
    return 1;
  }
  const int code = child.value();

  if (code != 0) {
    std::fprintf(stderr, "rill profile: the profiled command failed (exit code %d)\n", code);
    return code;
  }
  std::ifstream in(args.trace, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "rill profile: the command wrote no trace to %s (exit code %d)\n", args.trace.c_str(), code);
    return code != 0 ? code : 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto events = rill::parse_chrome_trace(text.str());
  if (!events.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", events.status().to_string().c_str());
    return 1;
  }
  const auto kernels = rill::summarize_profile(events.value(), &peaks);
  std::printf("\n== profile of `rill");
  for (const auto& a : args.command) std::printf(" %s", a.c_str());
  std::printf("` (trace: %s; open in Perfetto or chrome://tracing)\n%s", args.trace.c_str(),
              rill::format_profile_summary(kernels, &peaks).c_str());
  if (!args.roofline.empty()) {
    if (!write_text(args.roofline, rill::roofline_svg(kernels, peaks))) {
      std::fprintf(stderr, "rill profile: cannot write %s\n", args.roofline.c_str());
      return 1;
    }
    std::printf("roofline: %s\n", args.roofline.c_str());
  }
  return code;
}

}  // namespace rill_cli
