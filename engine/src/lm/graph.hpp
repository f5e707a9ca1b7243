// Building and running the recorded forward of a TransNormer over L positions (Graph).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "lm/model_impl.hpp"

namespace rill::lm::detail {

// Allocates the activations of `len` positions and records the forward in the given form. The
// recording binds `state`, which must outlive the graph.
Result<std::unique_ptr<Graph>> make_graph(const Model::Impl& m, StateTensors& state, uint32_t len, GraphForm form);

// Uploads tokens (exactly g.len, each < vocab) and the start position, runs, returns the logits
// of the last position. `submitted` is set once the work is on the device: from then on the
// state tensors hold these tokens whatever a later step (the wait, the read) returns.
Result<std::vector<float>> run_graph(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens,
                                     uint64_t position, bool& submitted);

// The same for a scoring graph, given each row's next token (g.len values, >= vocab where there is
// none): also fills log_probs with each row's log-probability of it (g.len values, NaN where none).
Result<std::vector<float>> run_scored_graph(const Model::Impl& m, Graph& g, std::span<const uint32_t> tokens,
                                            std::span<const uint32_t> targets, uint64_t position,
                                            std::vector<float>& log_probs, bool& submitted);

}  // namespace rill::lm::detail
