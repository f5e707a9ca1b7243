// ICL checkpoints: model parameters, optimizer moments, the trainer's GPU state words (step,
// which is also the sampler's position, Adam's bias-correction powers, skipped batches) and the
// configuration. One safetensors file; the configuration is JSON metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/icl.hpp"

namespace rill::icl::detail {

// The most steps a model may have taken: the device's step counter is 32 bits, and past this it
// would wrap within a few read_every runs. Training past it is refused, and so is a checkpoint at it.
constexpr int64_t kMaxSteps = int64_t(UINT32_MAX) - (int64_t(1) << 20);

struct Checkpoint {
  TrainConfig config;
  std::vector<float> params, moment1, moment2;
  std::vector<uint32_t> state;
  // The fixed training set the model was trained on (task_set_fingerprint); empty: tasks sampled
  // on the device. A resume must be given the same set, or none for an empty one.
  std::string task_set;
};

// Names a training set by its contents: its size and an FNV-1a hash of every value.
std::string task_set_fingerprint(const TaskSet& set);

// Written atomically: a crash leaves the previous checkpoint intact.
Status write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// The file is untrusted: format, version, configuration and every tensor's dtype and shape are
// checked, with an error naming what is wrong.
Result<Checkpoint> read_checkpoint(const std::string& path);

}  // namespace rill::icl::detail
