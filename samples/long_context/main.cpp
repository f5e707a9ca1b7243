// long_context: a TransNormer language model reads a long text in one prefill and then writes a
// little, showing what linear attention buys: the prefill runs in bounded segments, so device
// memory after the whole input is what it was after the first segment, and a decoded token costs
// the same at the end of the text as at its start.
//
//   long_context [text-file | --bytes N] [--config model.json [--weights model.safetensors]]
//                [--segment N] [--tokens N]
//
// Without a file the input is N synthetic bytes of word salad (default 1 MB). Without --weights the
// model has random weights of the --config shape (or the default shape): its text is noise, its
// speed and memory are real. Tokens are the text's bytes (no tokenizer): the model's vocabulary
// must hold the 256 byte values.
#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/context.hpp"
#include "rill/files.hpp"
#include "rill/lm.hpp"

namespace {

namespace lm = rill::lm;
using Clock = std::chrono::steady_clock;

#ifdef _WIN32
bool stderr_is_terminal() { return _isatty(_fileno(stderr)) != 0; }
#else
bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }
#endif

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr uint64_t kMostBytes = uint64_t(1) << 32;  // of text, from a file or --bytes

int fail(const rill::Status& s) {
  std::fprintf(stderr, "long_context: %s\n", s.to_string().c_str());
  return 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: long_context [text-file | --bytes N] [--config model.json [--weights model.safetensors]]\n"
               "                    [--segment N] [--tokens N]\n");
  return 2;
}

// Deterministic word salad: the same bytes on every run and platform.
std::string synthetic_text(size_t bytes) {
  static const char* const kWords[] = {"the",  "river", "carries", "light", "over",     "stone", "and",
                                       "a",    "quiet", "engine",  "turns", "slowly",   "under", "bright",
                                       "cold", "water", "while",   "birds", "remember", "every", "winter"};
  constexpr size_t kCount = sizeof(kWords) / sizeof(kWords[0]);
  std::string text;
  text.reserve(bytes + 16);
  uint32_t state = 12345u;
  while (text.size() < bytes) {
    state = state * 1664525u + 1013904223u;
    text += kWords[(state >> 8) % kCount];
    text += (state >> 28) == 0 ? ".\n" : " ";
  }
  text.resize(bytes);
  return text;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 3) v /= 1024.0, ++u;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buffer;
}

void print_escaped(const std::vector<uint32_t>& tokens) {
  for (uint32_t t : tokens) {
    if (t > 255)
      std::printf("<%u>", t);
    else if (t == '\\')
      std::printf("\\\\");
    else if (t == '\n' || (t >= 0x20 && t < 0x7f))
      std::putchar(int(t));
    else
      std::printf("\\x%02X", t);
  }
  std::printf("\n");
}

// Ctrl-C stops the prefill at the next segment boundary, keeping what it read. An app's cancel
// button works the same way: a flag its UI thread sets, read by the prefill's stop hook.
std::atomic<bool> g_stop_requested{false};
extern "C" void request_stop(int) { g_stop_requested = true; }

// On a terminal a bar; otherwise a line at every quarter.
struct Progress {
  Clock::time_point start = Clock::now();
  uint64_t offset = 0, total = 0;  // this call covers [offset, offset + call total) of `total`
  int last_quarter = 0;

  void operator()(uint64_t done, uint64_t) {
    const uint64_t at = offset + done;
    const double s = seconds_since(start);
    if (stderr_is_terminal()) {
      const int width = 30, filled = int(width * double(at) / double(std::max<uint64_t>(total, 1)));
      std::fprintf(stderr, "\rprefill [%s%s] %llu/%llu  %.1f s", std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(width - filled), '.').c_str(), (unsigned long long)at, (unsigned long long)total,
                   s);
      if (at == total) std::fprintf(stderr, "\r%*s\r", 70, "");
      std::fflush(stderr);
      return;
    }
    const int quarter = int(4 * at / std::max<uint64_t>(total, 1));
    if (quarter > last_quarter) {
      last_quarter = quarter;
      std::printf("  prefill %3d%%  %llu positions  %.2f s\n", 25 * quarter, (unsigned long long)at, s);
      std::fflush(stdout);
    }
  }
};

// A whole number in [low, high], digits only; anything else (a sign, "1e9", "12abc") is refused.
bool parse_count(const char* text, uint64_t low, uint64_t high, uint64_t* out) {
  const std::string_view s(text);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < low || v > high) return false;
  *out = v;
  return true;
}

}  // namespace

int run(int argc, char** argv) {
  std::string text_path, config_path, weights_path;
  size_t synthetic_bytes = 1'000'000;
  uint32_t segment = 0;
  int tokens = 64;
  bool bytes_given = false;
  std::vector<std::string> seen;  // an option given twice is refused, not silently the last one
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!text_path.empty()) return usage();  // one text file
      text_path = arg;
      continue;
    }
    if (i + 1 >= argc || std::find(seen.begin(), seen.end(), arg) != seen.end()) return usage();
    seen.push_back(arg);
    const char* value = argv[++i];
    uint64_t number = 0;
    if (arg == "--bytes") {
      if (!parse_count(value, 1, kMostBytes, &number)) return usage();
      synthetic_bytes = size_t(number);
      bytes_given = true;
    } else if (arg == "--config") {
      config_path = value;
    } else if (arg == "--weights") {
      weights_path = value;
    } else if (arg == "--segment") {
      if (!parse_count(value, 0, 65535, &number)) return usage();
      segment = uint32_t(number);
    } else if (arg == "--tokens") {
      if (!parse_count(value, 1, 100000, &number)) return usage();
      tokens = int(number);
    } else {
      return usage();
    }
  }
  // --bytes sizes the synthetic text: with a file it would be ignored.
  if (tokens < 1 || tokens > 100000 || (!weights_path.empty() && config_path.empty()) ||
      (bytes_given && !text_path.empty()))
    return usage();

  std::string text;
  if (!text_path.empty()) {
    // rill's reader: a FIFO or a directory is refused, not waited on, and errors say why.
    auto file = rill::read_file(text_path, kMostBytes);
    if (!file.is_ok()) return fail(file.status());
    text.assign(file->begin(), file->end());
  } else {
    text = synthetic_text(synthetic_bytes);
  }
  if (text.size() < 2) return fail(rill::invalid_argument("the input needs at least 2 bytes"));
  std::printf("input: %zu bytes%s\n", text.size(), text_path.empty() ? " (synthetic)" : "");

  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) return fail(ctx.status());
  std::printf("device: %s\n", ctx->device().name.c_str());

  // The model; the host copy of the weights is freed once they are on the device.
  lm::ModelOptions options;
  if (segment != 0) options.prefill_segment = segment;
  auto model = [&]() -> rill::Result<lm::Model> {
    rill::Result<lm::Weights> weights = rill::invalid_argument("no weights");
    if (!weights_path.empty()) {
      weights = lm::Weights::load(config_path, weights_path);
    } else {
      lm::ModelConfig config;
      if (!config_path.empty()) {
        RILL_ASSIGN_OR_RETURN(config, lm::load_config(config_path));
      } else {
        RILL_RETURN_IF_ERROR(config.validate());
      }
      weights = lm::Weights::random(std::move(config), 1);
    }
    if (!weights.is_ok()) return weights.status();
    return lm::Model::create(ctx.value(), weights.value(), options);
  }();
  if (!model.is_ok()) return fail(model.status());
  auto session = model->session();
  if (!session.is_ok()) return fail(session.status());
  const lm::ModelConfig& config = model->config();
  if (config.vocab < 256)  // a byte past the vocabulary would be read as another token
    return fail(rill::invalid_argument("this sample feeds the text's bytes as tokens: the model's vocabulary (" +
                                       std::to_string(config.vocab) + ") must hold all 256"));
  const uint32_t seg = model->options().prefill_segment;
  std::printf("model: width %u, heads %u, layers %u, vocab %u%s; weights %s, session state %s, segment %u\n",
              config.width, config.heads, config.layers, config.vocab, weights_path.empty() ? " (random)" : "",
              human_bytes(model->weight_bytes()).c_str(), human_bytes(session->state_bytes()).c_str(), seg);

  std::vector<uint32_t> input(text.size());
  for (size_t i = 0; i < text.size(); ++i) input[i] = uint32_t(uint8_t(text[i]));

  // Prefill in two calls: the first segment alone, then the rest. The session carries its state
  // across calls, so this is the same computation as one call; it lets the peak device memory be
  // read after the first segment and again after the whole input. A short input splits at a block
  // boundary past its middle (a split inside a block finishes that block by decoding steps, and a
  // longer second call needs longer activations: either would show as growth).
  const size_t half_up = (input.size() + 1) / 2 + config.block - 1;
  const size_t first =
      input.size() > 2 * size_t(seg) ? size_t(seg) : std::min(input.size(), half_up / config.block * config.block);
  // Untimed: the first prefill and decode of a model create their pipelines, once.
  {
    auto warm = model->session();
    if (!warm.is_ok()) return fail(warm.status());
    auto warm_logits = warm->prefill(std::span(input).first(std::min<size_t>(input.size(), config.block + 1)));
    if (warm_logits.is_ok()) warm_logits = warm->decode(0);
    if (!warm_logits.is_ok()) return fail(warm_logits.status());
  }
  Progress progress;
  progress.total = input.size();
  std::signal(SIGINT, request_stop);
  const lm::PrefillHooks hooks{.progress = std::ref(progress), .stop = [] { return g_stop_requested.load(); }};
  const auto prefill_start = Clock::now();
  uint64_t peak_first = 0;
  auto logits = session->prefill(std::span(input).first(first), hooks);
  if (logits.is_ok() && first < input.size()) {
    peak_first = ctx->memory_stats().peak_used_bytes;
    progress.offset = first;
    logits = session->prefill(std::span(input).subspan(first), hooks);
  }
  if (!logits.is_ok() && logits.status().code() == rill::StatusCode::kCancelled) {
    std::printf("\nprefill stopped at position %llu of %zu; a later prefill of the rest would go on from there\n",
                (unsigned long long)session->position(), input.size());
    return 130;
  }
  if (!logits.is_ok()) return fail(logits.status());
  std::signal(SIGINT, SIG_DFL);  // past the prefill, Ctrl-C ends the program as usual
  const double prefill_seconds = seconds_since(prefill_start);
  const uint64_t peak_all = ctx->memory_stats().peak_used_bytes;
  std::printf("prefill: %zu tokens in %.2f s, %.0f tokens/s\n", input.size(), prefill_seconds,
              double(input.size()) / prefill_seconds);
  if (first < input.size()) {
    const std::string growth =
        peak_all == peak_first ? "no growth" : "grew by " + std::to_string(peak_all - peak_first) + " bytes";
    std::printf("peak device memory: %s after %zu tokens, %s after %zu tokens (%s)\n", human_bytes(peak_first).c_str(),
                first, human_bytes(peak_all).c_str(), input.size(), growth.c_str());
  } else {  // one prefill call: nothing to compare with
    std::printf("peak device memory: %s after %zu tokens (one segment: too short to show growth or none)\n",
                human_bytes(peak_all).c_str(), input.size());
  }

  // Generate, greedily: the same text on every run. A session records its decoding on its first
  // decode: the clock starts after it, in both sessions.
  const lm::Sampler sampler({.temperature = 0.0f});
  std::vector<uint32_t> generated;
  auto decode_start = Clock::now();
  for (int i = 0; i < tokens; ++i) {
    const uint32_t token = sampler.sample(logits.value(), session->position());
    generated.push_back(token);
    logits = session->decode(token);
    if (!logits.is_ok()) return fail(logits.status());
    if (i == 0) decode_start = Clock::now();
  }
  const double decode_seconds = seconds_since(decode_start);

  // The same number of decodes at the start of a fresh session, for comparison.
  auto fresh = model->session();
  if (!fresh.is_ok()) return fail(fresh.status());
  auto fresh_logits = fresh->prefill(std::span(input).first(1));
  if (!fresh_logits.is_ok()) return fail(fresh_logits.status());
  auto fresh_start = Clock::now();
  for (int i = 0; i < tokens; ++i) {
    fresh_logits = fresh->decode(sampler.sample(fresh_logits.value(), fresh->position()));
    if (!fresh_logits.is_ok()) return fail(fresh_logits.status());
    if (i == 0) fresh_start = Clock::now();
  }
  const double fresh_seconds = seconds_since(fresh_start);
  const int timed = tokens - 1;

  std::printf("text: ");
  print_escaped(generated);
  if (timed > 0)
    std::printf(
        "decode: %d tokens at position %llu (the first untimed): %.1f tokens/s, %.3f ms/token (at position 1: "
        "%.3f ms/token)\n",
        tokens, (unsigned long long)input.size(), timed / decode_seconds, 1e3 * decode_seconds / timed,
        1e3 * fresh_seconds / timed);
  else
    std::printf("decode: 1 token at position %llu (untimed: the first decode records the session's decoding)\n",
                (unsigned long long)input.size());
  std::printf("peak device memory overall: %s\n", human_bytes(ctx->memory_stats().peak_used_bytes).c_str());
  return 0;
}

int main(int argc, char** argv) {
  try {  // the text and its tokens are held in host memory: 4 GiB of text takes 20
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    return fail(rill::resource_exhausted("not enough host memory for the input (try a smaller --bytes)"));
  }
}
