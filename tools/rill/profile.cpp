// `rill profile -- <subcommand ...>`: runs any rill subcommand with RILL_PROFILE set, then prints
// the per-kernel summary against the device's measured peaks and optionally draws the roofline.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "line_plot.hpp"
#include "output_paths.hpp"
#include "process.hpp"
#include "rill/rill.hpp"

namespace rill_cli {

namespace {

// An existing file that --trace or --roofline would replace must be one of its kind (or empty): the
// profiled command's own files are not all among its arguments (a --model folder's config.json, a
// --checkpoint's .adam beside it), and the trace replaced them after the run. `marker` must appear
// in the file's first 64 KiB (a trace's "traceEvents" key, an SVG's <svg> element).
rill::Status replaces_only_its_kind(const char* option, const std::string& path, const char* kind,
                                    const std::string& marker) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return rill::Status::ok();  // nothing there to lose (or not readable: the write will say)
  std::string head(64 * 1024, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  if (head.empty() || head.find(marker) != std::string::npos) return rill::Status::ok();
  return rill::invalid_argument(std::string(option) + " '" + path + "' exists and is not " + kind +
                                ": it is not replaced (remove it, or write elsewhere)");
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
  // The profiled command's arguments (or an option's value after '=') may name its files: the
  // trace and the plot must not replace one of them.
  std::vector<NamedPath> command_files;
  for (const std::string& word : args.command) {
    command_files.push_back({"the profiled command's argument", word});
    if (const size_t eq = word.find('='); eq != std::string::npos)
      command_files.push_back({"the profiled command's argument", word.substr(eq + 1)});
  }
  if (auto s = check_files({{"--trace", args.trace}, {"--roofline", args.roofline}}, command_files); !s.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", s.to_string().c_str());
    return 2;
  }
  for (const auto& s : {replaces_only_its_kind("--trace", args.trace, "a trace", "\"traceEvents\""),
                        args.roofline.empty() ? rill::Status::ok()
                                              : replaces_only_its_kind("--roofline", args.roofline, "an SVG", "<svg")})
    if (!s.is_ok()) {
      std::fprintf(stderr, "rill profile: %s\n", s.to_string().c_str());
      return 2;
    }
  // The command writes its trace beside the one asked for, which only a complete run replaces (an
  // earlier trace stays if this run fails); a partial one left by a killed run never passes for it.
  const std::string partial = args.trace + ".partial." + std::to_string(process_id());
  std::remove(partial.c_str());
  // The command's context also writes its summary beside the partial trace; this command prints
  // its own.
  struct RemovePartial {
    const std::string& path;
    ~RemovePartial() {
      std::remove(path.c_str());
      std::remove((path + ".summary.txt").c_str());
    }
  } remove_partial{partial};
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
  const auto child = run_self(args.command, "RILL_PROFILE", partial);
  if (!child.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", child.status().to_string().c_str());
    return 1;
  }
  const int code = child.value();
  // A command stopped by Ctrl-C (130, as rill generate ends after a clean stop) wrote the trace of
  // what ran: that is profiled, and the exit code kept.
  constexpr int kInterrupted = 130;
  if (code != 0 && code != kInterrupted) {
    std::fprintf(stderr, "rill profile: the profiled command failed (exit code %d)\n", code);
    return code;
  }
  std::ifstream in(partial, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "rill profile: the command wrote no trace (exit code %d)\n", code);
    return code != 0 ? code : 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  auto events = rill::parse_chrome_trace(text.str());
  if (!events.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", events.status().to_string().c_str());
    return 1;
  }
  const std::string trace = text.str();
  if (auto s =
          rill::write_file_atomic(args.trace, std::span(reinterpret_cast<const uint8_t*>(trace.data()), trace.size()));
      !s.is_ok()) {
    std::fprintf(stderr, "rill profile: %s\n", s.to_string().c_str());
    return 1;
  }
  const auto kernels = rill::summarize_profile(events.value(), &peaks);
  std::printf("\n== profile of `rill");
  for (const auto& a : args.command) std::printf(" %s", a.c_str());
  std::printf("` (trace: %s; open in Perfetto or chrome://tracing)\n%s", args.trace.c_str(),
              rill::format_profile_summary(kernels, &peaks).c_str());
  if (!args.roofline.empty()) {
    if (std::string error; !write_text_atomic(args.roofline, rill::roofline_svg(kernels, peaks), &error)) {
      std::fprintf(stderr, "rill profile: %s\n", error.c_str());
      return 1;
    }
    std::printf("roofline: %s\n", args.roofline.c_str());
  }
  return code;
}

}  // namespace rill_cli
