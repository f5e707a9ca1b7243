// Side-by-side PyTorch peers (bench_peers.hpp).
#include "bench_peers.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "json_text.hpp"
#include "process.hpp"

namespace rill_cli {
namespace {

// Kernel records with a PyTorch peer, and the request that describes the same work.
nlohmann::json peer_request(const nlohmann::json& record, bool quick) {
  if (!record.contains("median_ms") || !record.contains("op") || !record.contains("shape")) return nullptr;
  const std::string op = record["op"];
  nlohmann::json shape = record["shape"];
  const bool block_attention = op == "block_attention_fwd" || op == "block_attention_bwd";
  if (block_attention) shape["causal"] = record.value("variant", "causal") == "causal";
  const bool linear_attention =
      op == "linear_attention_causal" || op == "linear_attention_noncausal" || op == "linear_attention_causal_bwd";
  if (linear_attention && !shape.contains("dk")) return nullptr;
  if (op != "matmul" && op != "rmsnorm_fwd" && op != "rmsnorm_bwd" && !linear_attention && !block_attention)
    return nullptr;
  return {{"op", op}, {"shape", shape}, {"reps", quick ? 3 : 10}};
}

// The environment of the first record whose bench timed its own peer (lm, icl), for a run
// without kernel records.
nlohmann::json environment_of_timed_peers(const nlohmann::json& records) {
  for (const nlohmann::json& rec : records)
    for (const char* key : {"peer", "pytorch_cpu"}) {
      if (!rec.contains(key) || !rec[key].is_object() || !rec[key].contains("torch")) continue;
      nlohmann::json env;
      for (const char* field : {"torch", "device", "device_name", "threads", "blas"})
        if (rec[key].contains(field)) env[field] = rec[key][field];
      return env;
    }
  return {{"unavailable", "no record has a PyTorch peer"}};
}

}  // namespace

nlohmann::json run_python_json(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> command = {script};
  command.insert(command.end(), args.begin(), args.end());
  const std::optional<std::string> out = python_output(command);
  nlohmann::json j = out ? nlohmann::json::parse(*out, nullptr, false) : nlohmann::json();
  if (!out || j.is_discarded() || !j.is_object())
    return {{"unavailable", script + " failed (is python3-torch installed?)"}};
  return j;
}

nlohmann::json attach_peers(nlohmann::json& records, bool quick) {
  nlohmann::json requests = nlohmann::json::array();
  std::vector<size_t> owners;
  for (size_t i = 0; i < records.size(); ++i) {
    nlohmann::json r = peer_request(records[i], quick);
    if (r.is_null()) continue;
    requests.push_back(std::move(r));
    owners.push_back(i);
  }
  if (requests.empty()) return environment_of_timed_peers(records);
  auto dir = ScratchDir::create("rill-peers");
  if (!dir.is_ok()) return nlohmann::json{{"unavailable", dir.status().message()}};
  const std::filesystem::path file = dir->path() / "requests.json";
  if (!(std::ofstream(file) << json_text(requests, -1)))
    return nlohmann::json{{"unavailable", "cannot write " + file.string()}};
  const nlohmann::json answer =
      run_python_json(std::string(RILL_SOURCE_DIR) + "/tools/peers/torch_ops.py", {file.string()});
  if (!answer.contains("results") || !answer["results"].is_array() || answer["results"].size() != owners.size())
    return answer.contains("unavailable") ? answer : nlohmann::json{{"unavailable", "malformed answer from the peer script"}};
  for (size_t k = 0; k < owners.size(); ++k) {
    nlohmann::json& rec = records[owners[k]];
    const nlohmann::json& res = answer["results"][k];
    if (res.contains("median_ms") && res["median_ms"].is_number()) {
      const double peer_ms = res["median_ms"];
      rec["peer_ms"] = peer_ms;
      // The same clock on both sides: the GPU's where both have it (from rill's first dispatch's
      // start to its last one's end, gaps included, as the peer's CUDA events around its call),
      // else wall time per call (rill's host_ms: submission and wait included, as the peer's launch
      // and synchronize are). A GPU time against a wall time favoured rill.
      const bool device = res.contains("device_ms") && res["device_ms"].is_number() && rec.contains("gpu_span_ms") &&
                          rec["gpu_span_ms"].is_number();
      const double peer = device ? res["device_ms"].get<double>() : peer_ms;
      const double ours =
          device ? rec["gpu_span_ms"].get<double>() : rec.value("host_ms", rec["median_ms"].get<double>());
      if (device) rec["peer_device_ms"] = peer;
      rec["peer_clock"] = device ? "gpu" : "wall";
      rec["speedup_vs_peer"] = ours > 0 ? peer / ours : 0.0;
      rec["peer_form"] = res.value("peer_form", "");
      if (res.contains("threads")) rec["peer_threads"] = res["threads"];  // the faster thread count
    } else {
      rec["peer_unavailable"] = res.value("unavailable", "no result");
    }
  }
  return answer.value("peer", nlohmann::json{{"unavailable", "the peer script gave no environment"}});
}

}  // namespace rill_cli
