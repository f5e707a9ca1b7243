// What the language-model commands (`rill generate`, `rill score`) share: the options that name a
// model and how it runs on the device, loading it with its tokenizer, and reading a text file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "rill/context.hpp"
#include "rill/lm.hpp"
#include "rill/tokenizer.hpp"

namespace CLI {
class App;
}

namespace rill_cli {

struct LmModelArgs {
  std::string model;            // a model folder: config.json, model.safetensors, tokenizer.model (optional)
  std::string config, weights;  // JSON config and safetensors weights
  std::string tokenizer;        // a SentencePiece model; none: byte tokens
  bool random = false;          // random weights (the --config shape, or the defaults)
  uint64_t random_seed = 0;
  bool f16 = false;
  std::string weight_storage = "precision";  // linear layers: precision, f16, int8 or int4
  uint32_t int8_group = 0;                   // 0: ModelOptions' default; given, only with int8 storage
  uint32_t int4_group = 0;                   // the same for int4
  uint32_t segment = 0;  // 0: the model's default
};

// Adds --model, --config, --weights, --random, --tokenizer, --random-seed, --f16, --weight-storage,
// --int8-group, --int4-group and --segment to a command.
void add_model_options(CLI::App* cmd, LmModelArgs& a);

// A model folder resolved to its files and its tokenizer loaded: what can be checked before a
// device is opened.
struct ModelSource {
  LmModelArgs args;  // --model DIR resolved to its config, weights and tokenizer
  rill::lm::Tokenizer tokenizer;
};
rill::Result<ModelSource> open_model_source(const LmModelArgs& a);

// Loads the weights (`on_weights`, when given, sees the host weights before they go to the device)
// and makes the model in ctx. A tokenizer larger than the model's vocabulary is refused.
rill::Result<rill::lm::Model> make_model(const ModelSource& source, rill::Context& ctx,
                                         const std::function<rill::Status(const rill::lm::Weights&)>& on_weights = {});

// The bytes of a text file ("-": stdin), at most 1 GiB; `what` names it in errors.
rill::Result<std::string> read_text_file(const std::string& path, const std::string& what);

// "12.3 MiB".
std::string human_bytes(uint64_t bytes);

}  // namespace rill_cli
