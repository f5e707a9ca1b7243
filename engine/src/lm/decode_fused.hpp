// Fused decoding (plan::lm_decode): one position through the model in 2 dispatches per layer plus
// the embedding and the logits, with the kernels of shaders/lm/decode_*.glsl. The per-op graph
// (graph.cpp) serves devices the fused kernels do not fit.
#pragma once

#include "kernel_plan.hpp"
#include "lm/model_impl.hpp"

namespace rill::lm::detail {

// What plan::lm_decode reads about the model.
ops::plan::LmDecodeShape decode_shape(const Model::Impl& m);

// Allocates the fused step's tensors in g (g.len = 1) and records it; the recording binds `state`.
Status record_fused_decode(const Model::Impl& m, StateTensors& state, Graph& g, const ops::plan::LmDecodePlan& plan);

}  // namespace rill::lm::detail
