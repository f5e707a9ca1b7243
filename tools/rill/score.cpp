// `rill score`: how likely a language model finds a text. The text runs through the model as a
// prefill that also scores every token after the first on the device (lm::Session::score); the
// result is JSON: the mean negative log-likelihood per token, the perplexity and bits per byte,
// for comparing models, weight forms (f16, int8, int4) or checkpoints on the same text.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "json_text.hpp"
#include "rill/context.hpp"
#include "rill/lm.hpp"
#include "rill/tokenizer.hpp"

namespace rill_cli {

namespace lm = rill::lm;

namespace {

// The bytes of text the tokens after the first spell: each byte token is one; the whole text where
// BOS came first and no token was cut off; else, for SentencePiece, the text all the tokens decode
// to, less what the first adds to it (a text stream's first piece: only part of a character whose
// bytes the next tokens complete, which then count as scored), which is the text's own bytes only
// where the tokenizer reproduces the text (a piece it does not know decodes to " ⁇ ").
rill::Result<size_t> bytes_after_first(const lm::Tokenizer& tokenizer, const std::vector<uint32_t>& tokens,
                                       std::optional<size_t> whole_text_bytes) {
  if (tokenizer.is_bytes()) return tokens.size() - 1;
  if (whole_text_bytes && tokenizer.bos() && tokens.front() == *tokenizer.bos()) return *whole_text_bytes;
  RILL_ASSIGN_OR_RETURN(const std::string all, tokenizer.decode(tokens));
  lm::TextStream stream(tokenizer);
  RILL_ASSIGN_OR_RETURN(const std::string first, stream.push(tokens.front()));
  return all.size() - std::min(all.size(), first.size());
}

}  // namespace

CLI::App* add_score_command(CLI::App& app, ScoreArgs& a) {
  auto* cmd = app.add_subcommand(
      "score", "How likely a TransNormer language model finds a text: perplexity and bits per byte (JSON)");
  add_model_options(cmd, a);
  cmd->add_flag("--bos", a.bos,
                "Start the text with the tokenizer's beginning-of-sequence token where it has one (SentencePiece): "
                "every token of the text is then scored; else all but the first");
  auto* text = cmd->add_option("--text", a.text, "The text");
  auto* text_file = cmd->add_option("--text-file", a.text_file, "Read the text from a file (-: stdin)");
  text->excludes(text_file);
  cmd->add_option("--max-tokens", a.max_tokens, "Score at most this many tokens of the text (0: all)")->check(kCount);
  cmd->add_flag("--per-token", a.per_token, "Also print each scored token and its log-probability");
  return cmd;
}

int run_score(const ScoreArgs& a) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill score: %s\n", s.to_string().c_str());
    return 1;
  };
  if (!a.text && a.text_file.empty()) return fail(rill::invalid_argument("give --text TEXT or --text-file PATH"));
  auto source = open_model_source(a);
  if (!source.is_ok()) return fail(source.status());
  if (a.bos && !source->tokenizer.bos())  // it would be left out without a word
    return fail(
        rill::invalid_argument("--bos: the tokenizer has no beginning-of-sequence token (byte tokens have none)"));
  const lm::Tokenizer& tokenizer = source->tokenizer;
  auto text = a.text ? rill::Result<std::string>(*a.text) : read_text_file(a.text_file, "text file");
  if (!text.is_ok()) return fail(text.status());
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  auto model = make_model(*source, ctx.value());
  if (!model.is_ok()) return fail(model.status());
  auto encoded = tokenizer.encode(*text, a.bos);
  if (!encoded.is_ok()) return fail(encoded.status());
  std::vector<uint32_t> tokens = std::move(encoded).value();
  const bool cut = a.max_tokens > 0 && tokens.size() > a.max_tokens;
  if (cut) tokens.resize(a.max_tokens);
  if (tokens.size() < 2)
    return fail(rill::invalid_argument("the text encodes to " + std::to_string(tokens.size()) +
                                       " tokens: scoring needs two or more (the first is only context)"));
  auto session = model->session();
  if (!session.is_ok()) return fail(session.status());
  const auto start = std::chrono::steady_clock::now();
  auto scores = session->score(tokens);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!scores.is_ok()) return fail(scores.status());
  auto scored_bytes = bytes_after_first(tokenizer, tokens, cut ? std::nullopt : std::optional<size_t>(text->size()));
  if (!scored_bytes.is_ok()) return fail(scored_bytes.status());
  double nll = 0.0;
  for (float lp : scores->log_probs) nll -= double(lp);
  if (!std::isfinite(nll))
    return fail(
        rill::data_loss("the model gave a token a log-probability that is not finite (its weights or the "
                        "device's arithmetic failed)"));
  const double scored = double(scores->log_probs.size()), mean = nll / scored;
  const lm::ModelConfig& config = model->config();
  nlohmann::ordered_json j = {
      {"device", ctx->device().name},
      {"config", nlohmann::ordered_json::parse(lm::config_to_json(config))},
      {"precision", model->options().precision == lm::Precision::kF16 ? "f16" : "f32"},  // as in effect
      {"weight_storage", a.weight_storage},
      {"weight_bytes", model->weight_bytes()},
      {"tokens", tokens.size()},
      {"scored_tokens", scores->log_probs.size()},
      {"scored_bytes", *scored_bytes},
      {"nll_nats_per_token", mean},
      {"perplexity", std::exp(mean)},
      {"bits_per_token", mean / std::numbers::ln2},
      {"bits_per_byte",
       *scored_bytes > 0 ? nlohmann::ordered_json(nll / std::numbers::ln2 / double(*scored_bytes)) : nullptr},
      {"seconds", seconds},
      {"tokens_per_second", seconds > 0.0 ? double(tokens.size()) / seconds : 0.0},
      {"peak_device_bytes", ctx->memory_stats().peak_used_bytes}};
  if (a.per_token) {
    j["scored"] = std::vector<uint32_t>(tokens.begin() + 1, tokens.end());
    j["log_probs"] = scores->log_probs;
  }
  std::printf("%s\n", json_text(j).c_str());
  return 0;
}

}  // namespace rill_cli
