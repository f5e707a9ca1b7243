// Side-by-side peers for `rill bench --peers`: the same work timed in PyTorch in the same run
// (tools/peers/torch_ops.py; CUDA when PyTorch sees a GPU, else the CPU), attached to each kernel
// record as peer_ms and speedup_vs_peer (peer time / rill time: above 1, rill is faster).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rill_cli {

// Runs `python3 <script> <args>` and parses its standard output as one JSON object; on any failure
// an object {"unavailable": why}.
nlohmann::json run_python_json(const std::string& script, const std::vector<std::string>& args);

// Times the PyTorch peer of every kernel record that has one and attaches the result; returns the
// peer's environment (PyTorch version, device, threads, BLAS) or {"unavailable": why}.
nlohmann::json attach_peers(nlohmann::json& records, bool quick);

}  // namespace rill_cli
