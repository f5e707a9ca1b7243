// `rill generate`: a TransNormer language model continues a prompt on the device. The prompt runs
// as one prefill (in bounded segments), then tokens are sampled and decoded one at a time, each at
// the same cost whatever the position. The text goes to stdout as it is made (UTF-8 as it is; for
// byte-level models what is not text is escaped, utf8_stream.hpp); the timings and the peak device
// memory go to stderr (or all of it as JSON).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "json_text.hpp"
#include "output_paths.hpp"
#include "process.hpp"
#include "rill/context.hpp"
#include "rill/files.hpp"
#include "rill/lm.hpp"
#include "rill/safetensors.hpp"
#include "rill/tokenizer.hpp"
#include "utf8_stream.hpp"

namespace rill_cli {
namespace {

namespace lm = rill::lm;

// Ctrl-C: the prefill stops at its next segment and generation after its current token; the run
// then ends as usual (its summary, and the state saved where --save-state asks), with status 130.
// A second Ctrl-C (a model still loading, a long segment) ends the process at once.
std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) {
  if (g_interrupted.exchange(true)) std::_Exit(130);  // async-signal-safe
}
constexpr int kInterruptedExit = 130;  // 128 + SIGINT, as a shell reports a run Ctrl-C ended
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// `count` per second, or 0 when nothing was timed.
double rate(double count, double seconds) { return seconds > 0.0 ? count / seconds : 0.0; }

// The prompt; none (an empty string) goes on from a loaded state's last logits.
rill::Result<std::string> read_prompt(const GenerateArgs& a) {
  if (a.prompt) return *a.prompt;
  if (!a.prompt_file.empty()) return read_text_file(a.prompt_file, "prompt file");
  if (!a.load_state.empty()) return std::string();
  return rill::invalid_argument("give --prompt TEXT or --prompt-file PATH (or --load-state PATH to go on from it)");
}

// A progress bar for long prefills, on a terminal only (like train-icl).
void prefill_progress(uint64_t done, uint64_t total, Clock::time_point t0) {
  if (!stderr_is_terminal()) return;
  const int width = 30, filled = int(width * double(done) / double(std::max<uint64_t>(total, 1)));
  const double s = seconds_since(t0);
  std::fprintf(stderr, "\rprefill [%s%s] %llu/%llu positions  %.1f s  %.0f tokens/s",
               std::string(size_t(filled), '#').c_str(), std::string(size_t(width - filled), '.').c_str(),
               (unsigned long long)done, (unsigned long long)total, s, rate(double(done), s));
  if (done == total) std::fprintf(stderr, "\r%*s\r", 90, "");
  std::fflush(stderr);
}

}  // namespace

CLI::App* add_generate_command(CLI::App& app, GenerateArgs& a) {
  auto* cmd = app.add_subcommand("generate", "Continue a prompt with a TransNormer language model");
  add_model_options(cmd, a);
  cmd->add_flag("--bos", a.bos, "Start the prompt with the tokenizer's beginning-of-sequence token");
  auto* prompt = cmd->add_option("--prompt", a.prompt,
                                 "Prompt text (encoded by the tokenizer; a byte model's tokens are its bytes)");
  auto* prompt_file = cmd->add_option("--prompt-file", a.prompt_file, "Read the prompt from a file (-: stdin)");
  prompt->excludes(prompt_file);
  cmd->add_option("--tokens", a.tokens, "Tokens to generate")->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  cmd->add_option(
         "--temperature", a.temperature,
         "Sampling temperature (0: greedy, the most probable token; --top-k, --top-p and --seed then change nothing)")
      ->check(kFiniteNonNegative);
  cmd->add_option("--top-k", a.top_k, "Sample among the k most probable tokens (0: off)")->check(kCount32);
  cmd->add_option("--top-p", a.top_p, "Sample among the most probable tokens holding this probability (1: off)")
      ->check(kProbability);
  cmd->add_option("--seed", a.seed, "Seed of the sampler (each draw depends on the seed and the position)")
      ->check(kSeed);
  cmd->add_option("--save-state", a.save_state, "Save the session state at the end (prompt and generated text)");
  cmd->add_option("--save-state-every", a.save_state_every,
                  "Also save the state every N generated tokens (atomically: --load-state without a prompt goes on "
                  "from the last save as the run would have)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  cmd->add_option("--load-state", a.load_state,
                  "Start from a saved session state; a prompt continues it, none draws the next token from its logits");
  auto* save_config = cmd->add_option("--save-config", a.save_config, "Write the model's config (JSON) here");
  auto* save_weights = cmd->add_option("--save-weights", a.save_weights,
                                       "Write the model's weights (safetensors, f32) here, e.g. the --random ones");
  save_config->needs(save_weights);
  save_weights->needs(save_config);
  cmd->add_option("--export-logits", a.export_logits,
                  "Write the tokens (prompt then generated) and the logits after the prompt and after each generated "
                  "token (safetensors), to compare with another implementation (tools/peers/transnormer_torch.py); "
                  "held in memory until the end: (--tokens + 1) x vocab floats, at most 4 GiB of them (about three "
                  "times that while the file is written)");
  cmd->add_flag("--json", a.json, "Print a JSON summary (with the tokens) instead of the text");
  return cmd;
}

int run_generate(const GenerateArgs& args) {
  auto fail = [](const rill::Status& s) {
    std::fprintf(stderr, "rill generate: %s\n", s.to_string().c_str());
    return 1;
  };
  const GenerateArgs& a = args;
  auto source = open_model_source(a);
  if (!source.is_ok()) return fail(source.status());
  if (a.bos && !source->tokenizer.bos())  // it would be left out without a word
    return fail(
        rill::invalid_argument("--bos: the tokenizer has no beginning-of-sequence token (byte tokens have none)"));
  const lm::SamplerOptions sampler_options{
      .temperature = a.temperature, .top_k = a.top_k, .top_p = a.top_p, .seed = a.seed};
  if (auto s = lm::Sampler::validate(sampler_options); !s.is_ok()) return fail(s);
  if (a.save_state_every > 0 && a.save_state.empty())
    return fail(rill::invalid_argument("--save-state-every needs --save-state PATH"));
  // Saving the state loaded is how a conversation keeps going; the model's files and the prompt
  // file must survive.
  if (auto s = check_files({{"--save-state", a.save_state},
                            {"--save-config", a.save_config},
                            {"--save-weights", a.save_weights},
                            {"--export-logits", a.export_logits}},
                           {{"--config", source->args.config},
                            {"--weights", source->args.weights},
                            {"--tokenizer", source->args.tokenizer},
                            {"--prompt-file", a.prompt_file == "-" ? std::string() : a.prompt_file}});
      !s.is_ok())
    return fail(s);
  if (auto s = check_files(
          {{"--save-config", a.save_config}, {"--save-weights", a.save_weights}, {"--export-logits", a.export_logits}},
          {{"--load-state", a.load_state}});
      !s.is_ok())
    return fail(s);
  auto prompt = read_prompt(a);
  if (!prompt.is_ok()) return fail(prompt.status());
  if (prompt->empty() && !a.bos && a.load_state.empty())
    return fail(rill::invalid_argument("the prompt is empty (it needs at least one token, or --bos)"));
  if (a.bos && !a.load_state.empty())  // a BOS in the middle of a conversation starts another one
    return fail(rill::invalid_argument("--bos starts a text: it does not go with --load-state"));

  std::signal(SIGINT, on_interrupt);  // before anything long: an early Ctrl-C stops the prefill at once
#ifdef SIGPIPE
  // A reader that goes (`| head`) makes the writes fail, handled below (the state saved), instead of
  // killing the process before its save.
  std::signal(SIGPIPE, SIG_IGN);
#endif
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  if (!a.json) std::fprintf(stderr, "device: %s\n", ctx->device().name.c_str());

  const auto load_start = Clock::now();
  auto made = make_model(*source, ctx.value(), [&](const lm::Weights& weights) {
    return a.save_weights.empty() ? rill::Status::ok() : weights.save(a.save_config, a.save_weights);
  });
  if (!made.is_ok()) return fail(made.status());
  lm::Model& model = made.value();
  const lm::Tokenizer& tokenizer = source->tokenizer;
  auto session = model.session();
  if (!session.is_ok()) return fail(session.status());
  if (!a.load_state.empty()) {
    if (auto s = session->restore_state(a.load_state); !s.is_ok()) return fail(s);
  }
  const double load_seconds = seconds_since(load_start);
  const lm::ModelConfig& config = model.config();
  // Every row is held until the file is written: refused up front past 4 GiB, not by running out of
  // memory at some token, the run and its state lost.
  if (constexpr uint64_t kMostExported = uint64_t(4) << 30; !a.export_logits.empty()) {
    const uint64_t row_bytes = uint64_t(config.vocab) * 4;
    if (uint64_t(a.tokens) + 1 > kMostExported / row_bytes)
      return fail(rill::out_of_range("--export-logits: " + std::to_string(a.tokens + 1) + " rows of " +
                                     std::to_string(config.vocab) + " logits take more than 4 GiB; ask for at most " +
                                     std::to_string(kMostExported / row_bytes - 1) + " --tokens"));
  }
  // As in effect: a device without 16-bit storage runs an f16 request in f32.
  const char* precision = model.options().precision == lm::Precision::kF16 ? "f16" : "f32";
  if (!a.json)
    std::fprintf(stderr,
                 "model: vocab %u, width %u, heads %u, layers %u, %s, %s linear weights, weights %s, state %s; "
                 "ready in %.2f s\n",
                 config.vocab, config.width, config.heads, config.layers, precision,
                 a.weight_storage == "precision" ? precision : a.weight_storage.c_str(),
                 human_bytes(model.weight_bytes()).c_str(), human_bytes(session->state_bytes()).c_str(), load_seconds);

  auto encoded = tokenizer.encode(*prompt, a.bos);
  if (!encoded.is_ok()) return fail(encoded.status());
  const std::vector<uint32_t> prompt_tokens = std::move(encoded).value();
  // No prompt after --load-state: the next token is drawn from the logits the state was saved
  // with, so a run killed after a --save-state-every save goes on exactly as it would have.
  // Only without a prompt: a prompt that encodes to nothing (a space a tokenizer normalizes away)
  // is refused below, not taken for none.
  const bool go_on = prompt->empty() && prompt_tokens.empty() && !a.load_state.empty();
  if (prompt_tokens.empty() && !go_on) return fail(rill::invalid_argument("the prompt encodes to no tokens"));
  if (go_on && session->last_logits().empty())
    return fail(rill::failed_precondition(
        "'" + a.load_state +
        "' holds no logits (saved at position 0, or by an older rill): give a prompt to go on "
        "from it"));
  const std::optional<uint32_t> eos = tokenizer.eos();
  const uint64_t start_position = session->position();
  const auto prefill_start = Clock::now();
  const lm::PrefillHooks hooks{
      .progress = [&](uint64_t done, uint64_t total) { prefill_progress(done, total, prefill_start); },
      .stop = [] { return g_interrupted.load(); }};
  auto logits = go_on ? rill::Result<std::vector<float>>(
                            std::vector<float>(session->last_logits().begin(), session->last_logits().end()))
                      : session->prefill(prompt_tokens, hooks);
  const double prefill_seconds = seconds_since(prefill_start);
  if (!logits.is_ok() && logits.status().code() == rill::StatusCode::kCancelled) {
    // What was read is kept: saved, a later run goes on from it with the prompt's remaining tokens.
    const uint64_t read = session->position() - start_position;
    std::fprintf(stderr, "\ninterrupted: the prefill stopped at position %llu, after %llu of the prompt's %zu tokens\n",
                 (unsigned long long)session->position(), (unsigned long long)read, prompt_tokens.size());
    std::string path;
    if (!a.save_state.empty()) {
      // Not over the state this run continued: that one stays whole, the part read goes beside it.
      path = !a.load_state.empty() && rill::same_file(a.save_state, a.load_state) ? a.save_state + ".partial"
                                                                                  : a.save_state;
      if (auto s = session->save_state(path); !s.is_ok()) return fail(s);
      std::fprintf(stderr, "state: %s (position %llu)%s\n", path.c_str(), (unsigned long long)session->position(),
                   path == a.save_state ? "" : "; the loaded state is left as it was");
    }
    if (a.json) {  // the run's summary as far as it went
      const nlohmann::ordered_json j = {
          {"device", ctx->device().name},
          {"interrupted", "prefill"},
          {"start_position", start_position},
          {"prompt_tokens", prompt_tokens.size()},
          {"prompt_tokens_read", read},
          {"prefill_seconds", prefill_seconds},
          {"position", session->position()},
          {"generated_tokens", 0},
          {"state", path.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(path)}};
      std::printf("%s\n", json_text(j).c_str());
    }
    return kInterruptedExit;
  }
  if (!logits.is_ok()) return fail(logits.status());

  // Generation: each draw is keyed by the position, so a restored session continues identically.
  const lm::Sampler sampler(sampler_options);
  std::vector<float> exported = a.export_logits.empty() ? std::vector<float>{} : logits.value();
  std::vector<uint32_t> generated;
  std::string text;
  Utf8Stream byte_text;               // a byte model's text, escaped where it is not UTF-8
  lm::TextStream pieces(tokenizer);   // SentencePiece text as each token completes it
  // Text goes in first, its own thrown away: decoded on its own, a text's first word loses the
  // space SentencePiece writes before it ("Paris" after "The capital is"). The prompt's last tokens
  // (any visible piece when going on from a state), unless they end inside a character: the
  // stream would hold those bytes back and print them with the first generated token.
  if (!tokenizer.is_bytes()) {
    std::vector<uint32_t> primer(prompt_tokens.end() - std::ptrdiff_t(std::min<size_t>(prompt_tokens.size(), 8)),
                                 prompt_tokens.end());
    if (primer.empty()) {
      auto visible = tokenizer.encode("x");
      if (visible.is_ok()) primer = std::move(visible).value();
    }
    const auto primer_text = tokenizer.decode(primer);
    if (primer_text.is_ok() && !primer_text->ends_with("\xEF\xBF\xBD"))  // U+FFFD: a character cut off
      for (uint32_t t : primer)
        if (!pieces.push(t).is_ok()) break;
  }
  // A model's vocabulary may be padded past its SentencePiece tokenizer's (to a multiple of 64 or
  // so): those rows are no text, so only the tokenizer's tokens are drawn. Bytes models print any
  // token past the bytes as its number.
  const size_t drawable = tokenizer.is_bytes() ? config.vocab : tokenizer.vocab_size();
  const auto decode_start = Clock::now();
  std::string stopped_by;  // why generation stopped early, short of an interrupt: the run then fails after its save
  for (int64_t i = 0; i < a.tokens && !g_interrupted; ++i) {
    if (session->position() >= session->max_positions()) {  // what it holds is kept
      stopped_by = "the session is full at position " + std::to_string(session->position()) +
                   (session->max_positions() < UINT32_MAX ? " (a softmax layer's capacity)" : "");
      break;
    }
    const uint32_t token = sampler.sample(std::span(logits.value()).first(drawable), session->position());
    generated.push_back(token);
    std::string piece;
    if (tokenizer.is_bytes()) {
      piece = byte_text.push(token);
    } else {
      auto added = pieces.push(token);
      if (!added.is_ok()) return fail(added.status());
      piece = std::move(added).value();
    }
    text += piece;
    if (!a.json) {
      // A byte model's stream escapes what is not text; SentencePiece text may hold any byte
      // (<0x1B> is a byte token): control bytes as \xNN, as the byte model's.
      const std::string shown = tokenizer.is_bytes() ? piece : without_controls(piece);
      if (std::fwrite(shown.data(), 1, shown.size(), stdout) != shown.size() || std::fflush(stdout) != 0) {
        stopped_by = "the text could not be written (a closed pipe, a full disk)";
        generated.pop_back();  // not in the session: a run going on from the state draws it again
        break;
      }
    }
    logits = session->decode(token);
    if (!logits.is_ok()) return fail(logits.status());
    if (!a.export_logits.empty()) exported.insert(exported.end(), logits->begin(), logits->end());
    if (a.save_state_every > 0 && (i + 1) % a.save_state_every == 0)
      if (auto s = session->save_state(a.save_state); !s.is_ok()) return fail(s);
    if (eos && token == *eos) break;  // the model ended the text
  }
  const double decode_seconds = seconds_since(decode_start);
  const std::string unfinished = tokenizer.is_bytes() ? byte_text.finish() : pieces.finish();
  text += unfinished;
  if (!a.json) {
    const std::string shown = tokenizer.is_bytes() ? unfinished : without_controls(unfinished);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the text before the summary on stderr, also when both go to one pipe
  }

  if (!a.save_state.empty()) {
    if (auto s = session->save_state(a.save_state); !s.is_ok()) return fail(s);
  }
  if (!a.export_logits.empty()) {
    // logits row r follows token (prompt + generated)[prompt - 1 + r], at position start + prompt - 1 + r.
    std::vector<uint32_t> tokens = prompt_tokens;
    tokens.insert(tokens.end(), generated.begin(), generated.end());
    rill::SafetensorsWriter out;
    rill::Status s = out.add("tokens", rill::TensorDType::kU32, {int64_t(tokens.size())},
                             std::span(reinterpret_cast<const uint8_t*>(tokens.data()), tokens.size() * 4));
    if (s.is_ok())
      s = out.add_floats("logits", {int64_t(generated.size() + 1), int64_t(config.vocab)}, exported);
    if (s.is_ok()) s = out.set_metadata("start_position", std::to_string(start_position));
    if (s.is_ok()) s = out.write(a.export_logits);
    if (!s.is_ok()) return fail(s);
  }
  const uint64_t peak = ctx->memory_stats().peak_used_bytes;
  const double n_prompt = double(prompt_tokens.size()), n_generated = double(generated.size());

  if (a.json) {
    nlohmann::ordered_json j = {// insertion order: the summary reads top to bottom
                                {"device", ctx->device().name},
                                {"config", nlohmann::ordered_json::parse(lm::config_to_json(config))},
                                {"precision", precision},
                                {"weight_storage", a.weight_storage},
                                {"weight_bytes", model.weight_bytes()},
                                {"state_bytes", session->state_bytes()},
                                {"session_device_bytes", session->device_bytes()},
                                {"load_seconds", load_seconds},
                                {"start_position", start_position},
                                {"prompt_tokens", prompt_tokens.size()},
                                {"prefill_seconds", prefill_seconds},
                                {"prefill_tokens_per_second", rate(n_prompt, prefill_seconds)},
                                {"generated_tokens", generated.size()},
                                {"decode_seconds", decode_seconds},
                                {"decode_tokens_per_second", rate(n_generated, decode_seconds)},
                                {"decode_ms_per_token", generated.empty() ? 0.0 : 1e3 * decode_seconds / n_generated},
                                {"position", session->position()},
                                {"peak_device_bytes", peak},
                                {"tokens", generated},
                                {"text", text}};
    // Why the run ended early, where it did (the exit status says it too, but not to a reader of this).
    if (g_interrupted) j["interrupted"] = "generation";
    if (!stopped_by.empty()) j["stopped_by"] = stopped_by;
    // Invalid UTF-8 (a SentencePiece model can decode to any bytes) becomes U+FFFD: always valid JSON.
    std::printf("%s\n", json_text(j).c_str());
  } else {
    std::fprintf(stderr,
                 "prompt %zu tokens, prefill %.3f s (%.0f tokens/s); decode %zu tokens, %.1f tokens/s (%.2f ms/token); "
                 "position %llu; peak device memory %s\n",
                 prompt_tokens.size(), prefill_seconds, rate(n_prompt, prefill_seconds), generated.size(),
                 rate(n_generated, decode_seconds), generated.empty() ? 0.0 : 1e3 * decode_seconds / n_generated,
                 (unsigned long long)session->position(), human_bytes(peak).c_str());
    if (!a.save_state.empty()) std::fprintf(stderr, "state: %s\n", a.save_state.c_str());
  }
  // With SIGPIPE ignored, a reader gone after the last token shows only here.
  const bool written = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (g_interrupted) {
    std::fprintf(stderr, "interrupted: generation stopped after %zu tokens\n", generated.size());
    return kInterruptedExit;
  }
  if (!stopped_by.empty()) {
    std::fprintf(stderr, "error: generation stopped after %zu tokens: %s%s\n", generated.size(), stopped_by.c_str(),
                 a.save_state.empty() ? "" : "; the state was saved");
    return 1;
  }
  if (!written) {
    std::fprintf(stderr, "error: the output could not be written (a closed pipe, a full disk)%s\n",
                 a.save_state.empty() ? "" : "; the state was saved");
    return 1;
  }
  return 0;
}

}  // namespace rill_cli
