// The language-model commands' shared options and model loading (lm_model_args.hpp).
#include "lm_model_args.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "cli_checks.hpp"

namespace rill_cli {

namespace lm = rill::lm;

void add_model_options(CLI::App* cmd, LmModelArgs& a) {
  auto* model = cmd->add_option("--model", a.model,
                                "A model folder: config.json, model.safetensors and, when present, tokenizer.model "
                                "(what tools/convert/transnormerllm.py writes)");
  auto* config = cmd->add_option("--config", a.config, "Model config (JSON)");
  auto* weights = cmd->add_option("--weights", a.weights, "Model weights (safetensors; needs --config)");
  auto* random =
      cmd->add_flag("--random", a.random, "Random weights of the --config shape (default: the default config)");
  weights->needs(config);
  random->excludes(weights);
  model->excludes(config)->excludes(weights)->excludes(random);
  cmd->add_option("--tokenizer", a.tokenizer, "A SentencePiece tokenizer.model (default: bytes, or the --model one)");
  cmd->add_option("--random-seed", a.random_seed, "Seed of the random weights (with --random)")
      ->check(kSeed)
      ->needs(random);
  cmd->add_flag("--f16", a.f16, "f16 storage (f32 arithmetic): half the memory");
  cmd->add_option("--weight-storage", a.weight_storage,
                  "The linear layers' and the embedding's weights on the device: precision (as --f16 says), f16, "
                  "int8 with group scales (a quarter of f32) or int4 with group scales (a sixth); converted at load")
      ->check(CLI::IsMember({"precision", "f16", "int8", "int4"}));
  cmd->add_option("--int8-group", a.int8_group, "Rows per int8 scale (--weight-storage int8; default 64)")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--int4-group", a.int4_group, "Rows per int4 scale (--weight-storage int4; default 32)")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--segment", a.segment, "Prefill segment length in positions (a multiple of the block; 0: default)")
      ->check(kSegment);
}

namespace {

rill::Result<lm::Weights> make_weights(const LmModelArgs& a) {
  if (!a.random) return lm::Weights::load(a.config, a.weights);
  lm::ModelConfig config;
  if (!a.config.empty()) {
    RILL_ASSIGN_OR_RETURN(config, lm::load_config(a.config));
  } else {
    RILL_RETURN_IF_ERROR(config.validate());
  }
  return lm::Weights::random(std::move(config), a.random_seed);
}

}  // namespace

rill::Result<ModelSource> open_model_source(const LmModelArgs& args) {
  LmModelArgs a = args;
  if (!a.model.empty()) {  // a converted folder
    a.config = a.model + "/config.json";
    a.weights = a.model + "/model.safetensors";
    // A tokenizer that is there, or that cannot even be looked at (the loader then says why).
    std::error_code ec;
    const bool there = std::filesystem::exists(a.model + "/tokenizer.model", ec);
    if (a.tokenizer.empty() && (there || ec)) a.tokenizer = a.model + "/tokenizer.model";
  }
  // A group for a storage not asked for would be ignored: the run would not be what was asked.
  if (a.int8_group != 0 && a.weight_storage != "int8")
    return rill::invalid_argument("--int8-group is for --weight-storage int8 (given: " + a.weight_storage + ")");
  if (a.int4_group != 0 && a.weight_storage != "int4")
    return rill::invalid_argument("--int4-group is for --weight-storage int4 (given: " + a.weight_storage + ")");
  if (!a.random && (a.config.empty() || a.weights.empty()))
    return rill::invalid_argument("give --model DIR, --config and --weights, or --random (with an optional --config)");
  RILL_ASSIGN_OR_RETURN(lm::Tokenizer tokenizer, a.tokenizer.empty()
                                                     ? rill::Result<lm::Tokenizer>(lm::Tokenizer::bytes())
                                                     : lm::Tokenizer::load_sentencepiece(a.tokenizer));
  return ModelSource{std::move(a), std::move(tokenizer)};
}

rill::Result<lm::Model> make_model(const ModelSource& source, rill::Context& ctx,
                                   const std::function<rill::Status(const lm::Weights&)>& on_weights) {
  const LmModelArgs& a = source.args;
  lm::ModelOptions options;
  options.precision = a.f16 ? lm::Precision::kF16 : lm::Precision::kF32;
  RILL_ASSIGN_OR_RETURN(options.weights, lm::weight_storage_from_name(a.weight_storage));
  if (a.int8_group != 0) options.int8_group = a.int8_group;
  if (a.int4_group != 0) options.int4_group = a.int4_group;
  if (a.segment != 0) options.prefill_segment = a.segment;
  // The host weights are freed once uploaded.
  RILL_ASSIGN_OR_RETURN(lm::Model model, [&]() -> rill::Result<lm::Model> {
    RILL_ASSIGN_OR_RETURN(const lm::Weights weights, make_weights(a));
    if (on_weights) RILL_RETURN_IF_ERROR(on_weights(weights));
    return lm::Model::create(ctx, weights, options);
  }());
  // The model rounds a segment to whole DiagAttention blocks: said, not done silently.
  if (a.segment != 0 && model.options().prefill_segment != a.segment)
    std::fprintf(stderr, "note: --segment %u runs as %u positions (whole blocks of %u)\n", a.segment,
                 model.options().prefill_segment, model.config().block);
  if (source.tokenizer.vocab_size() > model.config().vocab)
    return rill::invalid_argument("the tokenizer has " + std::to_string(source.tokenizer.vocab_size()) +
                                  " tokens, more than the model's vocabulary (" + std::to_string(model.config().vocab) +
                                  ")");
  // Byte tokens into a model trained on SentencePiece pieces are other tokens: the text would be
  // noise, with nothing to say why. Random weights (benchmarks) are noise anyway.
  if (source.tokenizer.is_bytes() && !a.random && model.config().vocab > 512)
    std::fprintf(stderr,
                 "warning: the model's vocabulary has %u tokens and no tokenizer was given (--tokenizer, or "
                 "tokenizer.model in --model's folder): its prompt is read as bytes 0-255 and tokens past them "
                 "print as <N>\n",
                 model.config().vocab);
  return model;
}

rill::Result<std::string> read_text_file(const std::string& path, const std::string& what) {
  const bool from_stdin = path == "-";
  std::FILE* f = from_stdin ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) return rill::not_found("cannot open the " + what + " '" + path + "'");
  // Bounded: 1 GiB is 256M tokens at best, past what any session is asked to read; an endless
  // stream (/dev/zero) would otherwise grow until the host's memory runs out.
  constexpr size_t kMaxBytes = size_t(1) << 30;
  std::string text;
  char buffer[1 << 16];
  bool too_long = false;
  for (size_t n; !too_long && (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) {
    too_long = text.size() + n > kMaxBytes;
    if (!too_long) text.append(buffer, n);
  }
  const bool failed = std::ferror(f) != 0;
  if (!from_stdin) std::fclose(f);
  if (failed) return rill::unavailable("reading the " + what + " '" + path + "' failed");
  if (too_long) return rill::out_of_range("the " + what + " '" + path + "' is longer than 1 GiB");
  return text;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buffer;
}

}  // namespace rill_cli
