// multiple_choice: a language model picks the likeliest of several continuations of a prompt (the
// answer to a question, the label of a text). The prompt is prefilled once; each choice is scored
// in a fork of that session, so the prompt costs one prefill however many choices there are.
//
//   multiple_choice [--config model.json [--weights model.safetensors]] PROMPT CHOICE [CHOICE ...]
//
// Tokens are bytes. Without --weights the model has random weights of the --config shape (or the
// default shape): its pick is noise, the calls are the real ones.
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "rill/context.hpp"
#include "rill/lm.hpp"

namespace {

namespace lm = rill::lm;

int fail(const rill::Status& s) {
  std::fprintf(stderr, "multiple_choice: %s\n", s.to_string().c_str());
  return 1;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: multiple_choice [--config model.json [--weights model.safetensors]] PROMPT CHOICE [CHOICE ...]\n");
  return 2;
}

// The byte tokens of a text: through unsigned char, or bytes from 0x80 on (any accented letter)
// would become ids near 2^32 where char is signed.
std::vector<uint32_t> bytes_of(std::string_view text) {
  std::vector<uint32_t> ids;
  for (unsigned char b : text) ids.push_back(b);
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, weights_path;
  std::vector<std::string> texts;  // the prompt, then the choices
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--config" || arg == "--weights") && i + 1 < argc) {
      std::string& path = arg == "--config" ? config_path : weights_path;
      if (!path.empty()) return usage();  // given twice: refused, not the last one taken
      path = argv[++i];
    } else if (arg.starts_with("--")) {
      return usage();
    } else {
      texts.emplace_back(arg);
    }
  }
  if (texts.size() < 3 || (!weights_path.empty() && config_path.empty())) return usage();
  for (const std::string& text : texts)
    if (text.empty()) return fail(rill::invalid_argument("the prompt and every choice need at least one byte"));

  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  auto weights = [&]() -> rill::Result<lm::Weights> {
    if (!weights_path.empty()) return lm::Weights::load(config_path, weights_path);
    lm::ModelConfig config;
    if (!config_path.empty()) {
      RILL_ASSIGN_OR_RETURN(config, lm::load_config(config_path));
    }
    return lm::Weights::random(config, 1);
  }();
  if (!weights.is_ok()) return fail(weights.status());
  auto model = lm::Model::create(*ctx, *weights);
  if (!model.is_ok()) return fail(model.status());
  auto session = model->session();
  if (!session.is_ok()) return fail(session.status());
  auto prompt_logits = session->prefill(bytes_of(texts[0]));
  if (!prompt_logits.is_ok()) return fail(prompt_logits.status());

  size_t best = 0;
  double best_mean = -INFINITY;
  for (size_t c = 1; c < texts.size(); ++c) {
    // A choice's log-probability after the prompt: its first token from the prompt's logits, the
    // rest scored in a fork of the prompted session (which stays at the prompt for the next).
    const std::vector<uint32_t> tokens = bytes_of(texts[c]);
    auto first = lm::log_prob(*prompt_logits, tokens[0]);
    if (!first.is_ok()) return fail(first.status());
    auto fork = session->fork();
    if (!fork.is_ok()) return fail(fork.status());
    auto scores = fork->score(tokens);
    if (!scores.is_ok()) return fail(scores.status());
    double total = *first;
    for (float log_prob : scores->log_probs) total += log_prob;
    const double mean = total / double(tokens.size());  // per byte: long and short choices compare
    std::printf("choice %zu \"%s\": log-probability %.3f, %.3f per byte\n", c, texts[c].c_str(), total, mean);
    if (mean > best_mean) best = c, best_mean = mean;
  }
  std::printf("picked choice %zu: \"%s\"\n", best, texts[best].c_str());
  return 0;
}
