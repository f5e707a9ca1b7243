// Building and running the recorded forward of a TransNormer over L positions (Graph).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "lm/model_impl.hpp"

namespace rill::lm::detail {

// Allocates the activations of `len` positions and records the forward; decode = the one-position
// recurrent form. The recording binds `state`, which must outlive the graph.
Result<std::unique_ptr<Graph>> make_graph(const Model::Impl& m, StateTensors& state, uint32_t len, bool decode);

// Uploads tokens (exactly g.len, each < vocab) and the start position, runs, returns the logits
// of the last position.
Result<std::vector<float>> run_graph(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens, uint64_t position);

}  // namespace rill::lm::detail
