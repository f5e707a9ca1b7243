// `rill demo`: saxpy on the device, recorded once and replayed, checked against the CPU.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "commands.hpp"
#include "rill/rill.hpp"

namespace rill_cli {

CLI::App* add_demo_command(CLI::App& app, DemoArgs& a) {
  auto* cmd = app.add_subcommand("demo", "Run a small computation on the device and check it against the CPU");
  cmd->add_option("--elements", a.elements, "Vector length")->check(CLI::Range(1u, 1u << 28));
  cmd->add_option("--replays", a.replays, "Times the recorded sequence is replayed")->check(CLI::Range(1u, 1u << 20));
  return cmd;
}

int run_demo(const DemoArgs& args) {
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) {
    std::fprintf(stderr, "rill demo: %s\n", ctx.status().to_string().c_str());
    return 1;
  }
  rill::Context& c = ctx.value();
  std::printf("device: %s (%s)\n", c.device().name.c_str(), c.selection_reason().c_str());
  const uint32_t n = args.elements;
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) {
    // Eighths times a = 0.5: every y (at most 1 + 2^20 * 0.875 < 2^21, a multiple of 1/8) is exact
    // in f32 whatever the rounding or contraction, so the check is exact and misses no replay.
    x[i] = static_cast<float>(i % 8) * 0.25f;
    y[i] = 1.0f;
  }
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill demo: %s\n", s.to_string().c_str());
    return 1;
  };
  auto tx = c.tensor(rill::DType::kF32, {n}, "x");
  auto ty = c.tensor(rill::DType::kF32, {n}, "y");
  if (!tx.is_ok()) return fail(tx.status());
  if (!ty.is_ok()) return fail(ty.status());
  if (auto s = c.upload_floats(*tx, x); !s.is_ok()) return fail(s);
  if (auto s = c.upload_floats(*ty, y); !s.is_ok()) return fail(s);

  auto kernel_variant = c.kernel_variant("util/saxpy");
  const bool cpu_variant = kernel_variant.is_ok() && kernel_variant.value() == "cpu";
  const uint32_t per_group = cpu_variant ? 64 * 16 : 256;  // the variants' default tiling
  const float a = 0.5f;
  struct Push {
    uint32_t n;
    float a;
  } push{n, a};
  auto seq = c.sequence();
  if (!seq.is_ok()) return fail(seq.status());
  if (auto s = seq->dispatch({.kernel = "util/saxpy", .bindings = {&tx.value(), &ty.value()},
                              .push = rill::push_bytes(push), .groups = {(n + per_group - 1) / per_group, 1, 1},
                              .flops = 2ull * n, .bytes = 12ull * n});
      !s.is_ok())
    return fail(s);
  const auto start = std::chrono::steady_clock::now();
  if (auto s = seq->run(args.replays); !s.is_ok()) return fail(s);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto result = c.download_floats(*ty);
  if (!result.is_ok()) return fail(result.status());

  double max_err = 0.0;
  bool ok = true;
  for (uint32_t i = 0; i < n; ++i) {
    const double expected = 1.0 + static_cast<double>(args.replays) * a * x[i];
    const double err = std::fabs(expected - result.value()[i]) / std::max(1.0, std::fabs(expected));
    if (!(err == 0.0)) ok = false;  // a NaN is not equal either (std::max would drop it)
    if (!(err <= max_err)) max_err = err;
  }
  const double gb = 3.0 * 4.0 * n * args.replays / 1e9;
  std::printf("saxpy (%s variant): y += %.1f * x over %u elements, replayed %u times in %.2f ms (%.2f GB/s)\n",
              cpu_variant ? "cpu" : "default", a, n, args.replays, ms, gb / (ms / 1e3));
  std::printf("check against the CPU: max relative error %.2e -> %s\n", max_err, ok ? "OK" : "MISMATCH");
  const auto p = c.pipeline_stats();
  std::printf("pipelines: %llu created in %.2f ms\n", static_cast<unsigned long long>(p.pipelines_created),
              p.creation_ms_total);
  return ok ? 0 : 1;
}

}  // namespace rill_cli
