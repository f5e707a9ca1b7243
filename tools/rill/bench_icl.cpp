// `rill bench --op icl`: training throughput of the ICL trainer at the papers' settings, and the
// same model trained by PyTorch on the CPU (tools/peers/icl_torch_baseline.py, when Debian's
// python3-torch is installed) measured in the same run, with the ratio.
#include <chrono>
#include <cstdio>
#include <memory>

#include "bench_ops.hpp"
#include "bench_peers.hpp"
#include "rill/icl.hpp"

namespace rill_cli {
namespace {

using namespace rill::icl;

// Runs the PyTorch baseline and returns its JSON record, or an object saying why there is none.
nlohmann::json torch_baseline(const std::string& setting, int steps) {
  return run_python_json(std::string(RILL_SOURCE_DIR) + "/tools/peers/icl_torch_baseline.py",
                         "--setting " + setting + " --steps " + std::to_string(steps));
}

}  // namespace

bool bench_icl(rill::Context& ctx, bool quick, bool with_torch, nlohmann::json& out) {
  struct Setting {
    const char* name;
    TrainConfig config;
  };
  const Setting settings[] = {{"ahn1", ahn_setting(1)},
                              {"vladymyrov", vladymyrov_setting(Parameterization::kFull, 1.0f)}};
  for (const Setting& s : settings) {
    const int steps = quick ? 30 : 300;
    auto trainer = Trainer::create(ctx, s.config);
    if (!trainer.is_ok()) {
      std::fprintf(stderr, "rill bench icl: %s\n", trainer.status().to_string().c_str());
      return false;
    }
    if (!trainer->train(s.config.read_every).is_ok()) return false;  // warm-up: pipelines, caches
    const auto t0 = std::chrono::steady_clock::now();
    auto records = trainer->train(steps);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!records.is_ok()) {
      std::fprintf(stderr, "rill bench icl: %s\n", records.status().to_string().c_str());
      return false;
    }
    const TrainConfig& c = s.config;
    nlohmann::json rec = {
        {"op", "icl_train"},
        {"variant", s.name},
        {"shape",
         {{"d", c.task.d}, {"n", c.task.n}, {"layers", c.model.layers}, {"batch", c.batch},
          {"parameters", parameter_count(c.model, c.task.d)}, {"param", std::string(name(c.model.param))}}},
        {"steps", steps},
        {"median_ms", 1e3 * seconds / steps},  // mean per step over one timed run
        {"steps_per_s", steps / seconds},
        {"tasks_per_s", steps * double(c.batch) / seconds},
        {"host_reads_per_step", 1.0 / c.read_every},
        {"final_loss", records->back().loss}};
    if (with_torch) {
      nlohmann::json torch = torch_baseline(s.name, quick ? 20 : 100);
      if (torch.contains("steps_per_s") && torch["steps_per_s"].is_number()) {
        const double peer_ms = 1e3 / torch["steps_per_s"].get<double>();
        rec["peer_ms"] = peer_ms;
        rec["speedup_vs_peer"] = peer_ms / rec["median_ms"].get<double>();
        rec["speedup_vs_pytorch_cpu"] = rec["speedup_vs_peer"];  // the name records had before peer_ms
      }
      rec["pytorch_cpu"] = torch;
    }
    out.push_back(rec);
  }
  return true;
}

}  // namespace rill_cli
