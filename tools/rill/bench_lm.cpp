// `rill bench --op lm`: TransNormer prefill time and peak device memory against the prompt length,
// and decode ms/token against the position, next to a softmax-attention model of equal size
// (every attention layer full causal softmax attention with a growing key/value cache).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_ops.hpp"
#include "bench_peers.hpp"
#include "commands.hpp"
#include "median.hpp"
#include "process.hpp"
#include "rill/lm.hpp"
#include "rill/log.hpp"

namespace rill_cli {
namespace {

// Median ms per decoded token over `tokens` greedy steps from the session's position.
rill::Result<double> time_decode(rill::lm::Session& s, std::vector<float> logits, int tokens) {
  std::vector<double> ms;
  for (int i = 0; i < tokens; ++i) {
    const uint32_t next = uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const auto t0 = Clock::now();
    RILL_ASSIGN_OR_RETURN(logits, s.decode(next));
    ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// A session at position n without running the prompt: a saved state whose position says n (the
// caches hold zeros). Decoding cost depends on the position, not on the cached values; this is how
// the softmax baseline reaches positions its quadratic prefill cannot in a benchmark's time. The
// rewrite is a v2 state, which has no checksum (v3's covers the position); the warning that it
// restores unchecked is this rewrite's own, so it is not printed.
rill::Status fast_forward(rill::lm::Session& s, uint64_t n) {
  RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, s.serialize_state());
  RILL_ASSIGN_OR_RETURN(rill::SafetensorsFile file, rill::SafetensorsFile::from_bytes(std::move(bytes)));
  rill::SafetensorsWriter w;
  for (const auto& [k, v] : file.metadata())
    if (k != "checksum")
      RILL_RETURN_IF_ERROR(w.set_metadata(k, k == "position" ? std::to_string(n)
                                             : k == "format" ? "rill.lm.state.v2"
                                                             : v));
  for (const auto& e : file.entries()) RILL_RETURN_IF_ERROR(w.add(e.name, e.dtype, e.shape, file.bytes(e)));
  rill::set_log_callback([](rill::MessageSeverity severity, std::string_view message) {
    if (severity == rill::MessageSeverity::kInfo || message.find("without a checksum") != std::string_view::npos)
      return;
    std::fprintf(stderr, "rill %s: %.*s\n", severity == rill::MessageSeverity::kError ? "error" : "warning",
                 int(message.size()), message.data());
  });
  rill::Status restored = s.deserialize_state(w.serialize());
  rill::set_log_callback(nullptr);  // the default sink again
  return restored;
}

// The model a record timed, as it runs: the precision in effect (f16 falls back to f32 on a device
// without 16-bit storage), its layers and its weight bytes.
nlohmann::json model_shape_of(const rill::lm::Model& model) {
  const rill::lm::ModelConfig& config = model.config();
  return {{"width", config.width},
          {"heads", config.heads},
          {"layers", config.layers},
          {"ffn_width", config.ffn_width},
          {"vocab", config.vocab},
          {"block", config.block},
          {"config", nlohmann::json::parse(rill::lm::config_to_json(config))},
          {"segment", model.options().prefill_segment},
          {"weight_storage", rill::lm::weight_storage_name(model.options().weights)},
          {"precision", model.options().precision == rill::lm::Precision::kF16 ? "f16" : "f32"},
          {"weight_bytes", model.weight_bytes()}};
}

// Decode cost against the position for both models, measured in interleaved rounds (each round
// decodes a few tokens at every position in turn) so that the noise of a shared machine spreads
// over all positions alike. Sessions reach their positions by fast_forward.
// `model` and the softmax baseline's models take the bench's options (precision, weight storage,
// segment): the records name them.
bool bench_decode_interleaved(rill::Context& ctx, const rill::lm::ModelConfig& config,
                              rill::lm::Model& model_under_test, const rill::lm::ModelOptions& options,
                              const rill::lm::Weights& soft_weights, bool quick, nlohmann::json& out) {
  const std::vector<uint64_t> positions = {1024, 65536, 1048576};
  const int rounds = quick ? 2 : 8, per_round = 6;
  struct Probe {
    std::string variant;
    uint64_t position;
    nlohmann::json model_shape;            // of the model it times
    std::optional<rill::lm::Model> model;  // the softmax baseline's cache is sized per position
    std::optional<rill::lm::Session> session;
    std::vector<float> logits;
    std::vector<double> ms;
  };
  std::vector<Probe> probes;
  for (const char* variant : {"transnormer", "softmax_baseline"}) {
    for (uint64_t n : positions) {
      Probe p{variant, n, {}, {}, {}, std::vector<float>(config.vocab, 0.0f), {}};
      rill::lm::Model* model = &model_under_test;
      if (p.variant == "softmax_baseline") {
        rill::lm::ModelOptions soft_options = options;
        soft_options.softmax_capacity = uint32_t(n + uint64_t(rounds) * per_round + 1);
        auto m = rill::lm::Model::create(ctx, soft_weights, soft_options);
        if (m.status().code() == rill::StatusCode::kOutOfRange) continue;  // recorded by the prefill sweep
        if (!report(m.status(), "lm decode softmax model")) return false;
        p.model.emplace(std::move(m).value());
        model = &*p.model;
      }
      p.model_shape = model_shape_of(*model);
      auto session = model->session();
      if (!report(session.status(), "lm decode session")) return false;
      p.session.emplace(std::move(session).value());
      if (!report(fast_forward(*p.session, n), "lm decode fast-forward")) return false;
      probes.push_back(std::move(p));
    }
  }
  for (int r = 0; r < rounds; ++r)
    for (Probe& p : probes)
      for (int i = 0; i < per_round; ++i) {
        const uint32_t next = uint32_t(std::max_element(p.logits.begin(), p.logits.end()) - p.logits.begin());
        const auto t0 = Clock::now();
        auto logits = p.session->decode(next);
        p.ms.push_back(ms_since(t0));
        if (!report(logits.status(), "lm decode")) return false;
        p.logits = std::move(logits).value();
      }
  for (Probe& p : probes) {
    std::sort(p.ms.begin(), p.ms.end());
    out.push_back({{"op", "lm_decode_interleaved"},
                   {"variant", p.variant},
                   {"shape", {{"position", p.position}, {"model", p.model_shape}}},
                   {"median_ms", median(p.ms)},
                   {"min_ms", p.ms.front()},
                   {"tokens", p.ms.size()},
                   {"state_bytes", p.session->state_bytes()},
                   {"position_reached_by", "restored state"}});
    std::fprintf(stderr, "lm decode (interleaved rounds) %s at %llu: median %.2f ms, min %.2f ms\n", p.variant.c_str(),
                 (unsigned long long)p.position, p.ms[p.ms.size() / 2], p.ms.front());
  }
  return true;
}

}  // namespace

std::vector<uint32_t> random_prompt(uint64_t n, uint32_t vocab) {
  std::vector<uint32_t> t(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& v : t) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = uint32_t(x % vocab);
  }
  return t;
}

// Prompts up to this long are also scored (lm_score records): the once-only recording of the
// scoring form and one run each.
constexpr uint64_t kScoreMaxTokens = 65536;

// Host round trips per token are noisy on shared machines: a full run times more tokens.
int lm_decode_tokens(bool quick) { return quick ? 8 : 48; }

rill::Result<LmBenchSetup> lm_bench_setup(const BenchArgs& args) {
  LmBenchSetup setup;  // the default config: width 256, 8 heads, 6 layers (3 DiagAttention, 3 NormAttention)
  if (!args.lm_config.empty()) {
    auto loaded = rill::lm::load_config(args.lm_config);
    if (!loaded.is_ok()) return loaded.status().with_context("lm config");
    setup.config = std::move(loaded).value();
  }
  if (auto s = setup.config.validate(); !s.is_ok()) return s.with_context("lm config");
  // --quick stops at 4096 tokens; --lm-max-tokens lowers that further.
  const uint64_t max_tokens = std::min<uint64_t>(args.quick ? 4096 : UINT64_MAX, args.lm_max_tokens);
  for (uint64_t n : {1024, 4096, 16384, 65536, 262144, 1048576})
    if (n <= max_tokens) setup.lengths.push_back(n);
  if (setup.lengths.empty()) return rill::invalid_argument("lm options: --lm-max-tokens below 1024");
  RILL_ASSIGN_OR_RETURN(setup.options.weights, rill::lm::weight_storage_from_name(args.lm_weight_storage));
  setup.options.precision = args.lm_precision == "f16" ? rill::lm::Precision::kF16 : rill::lm::Precision::kF32;
  if (args.lm_segment != 0) setup.options.prefill_segment = args.lm_segment;
  // A config with softmax layers (--lm-config) holds the longest prompt and its decoded tokens.
  const auto& kinds = setup.config.layer_kinds;
  if (std::count(kinds.begin(), kinds.end(), rill::lm::LayerKind::kSoftmax) > 0)
    setup.options.softmax_capacity =
        uint32_t(std::min<uint64_t>(setup.lengths.back() + lm_decode_tokens(args.quick) + 1, UINT32_MAX));
  return setup;
}

bool bench_lm(rill::Context& ctx, const BenchArgs& args, const LmBenchSetup& setup, nlohmann::json& out) {
  const bool quick = args.quick;
  const rill::lm::ModelConfig& config = setup.config;
  const std::vector<uint64_t>& lengths = setup.lengths;
  const rill::lm::ModelOptions& options = setup.options;
  const int decode_tokens = lm_decode_tokens(quick);
  auto weights = rill::lm::Weights::random(config, 1);
  if (!report(weights.status(), "lm weights")) return false;
  ctx.reset_peak_memory();
  auto model = rill::lm::Model::create(ctx, *weights, options);
  if (!report(model.status(), "lm model")) return false;
  const nlohmann::json model_shape = model_shape_of(*model);
  // --peers: the same model (saved to temporary files) prefilled by the PyTorch TransNormer.
  std::optional<ScratchDir> peer_dir;  // removed on every way out (the weights may take gigabytes)
  std::string peer_config, peer_weights;
  if (args.peers) {
    auto dir = ScratchDir::create("rill-lm-peer");
    if (!report(dir.status(), "lm a directory for the peer's model")) return false;
    peer_dir.emplace(std::move(dir).value());
    peer_config = (peer_dir->path() / "config.json").string();
    peer_weights = (peer_dir->path() / "model.safetensors").string();
    if (!report(weights->save(peer_config, peer_weights), "lm saving the model for the peer")) return false;
  }
  {  // Warm-up: the first prefill and decode create the pipelines; no figure should include that.
    auto warm = model->session();
    if (!report(warm.status(), "lm session")) return false;
    auto logits = warm->prefill(random_prompt(std::min<uint64_t>(lengths.front(), 2 * config.block + 1), config.vocab));
    if (!report(logits.status(), "lm warm-up")) return false;
    if (!report(time_decode(*warm, std::move(logits).value(), 2).status(), "lm warm-up")) return false;
    auto scoring = model->session();  // and the scoring form's kernels
    if (!report(scoring.status(), "lm session")) return false;
    if (!report(scoring->score(random_prompt(2 * config.block + 1, config.vocab)).status(), "lm warm-up")) return false;
  }
  std::vector<std::pair<double, double>> fit;
  for (uint64_t n : lengths) {
    const auto prompt = random_prompt(n, config.vocab);
    // Throwaway prefills of the same prompt until a GPU is at speed (the peer's process left it idle).
    const rill::Status warmed = keep_gpu_busy(ctx, [&]() -> rill::Status {
      auto throwaway = model->session();
      return throwaway.is_ok() ? throwaway->prefill(prompt).status() : throwaway.status();
    });
    if (!report(warmed, "lm prefill warm-up")) return false;
    // Scoring the same prompt (the prefill plus the head over every row) in a session of its own,
    // gone before the prefill's: each peak holds one session.
    std::optional<nlohmann::json> score_record;
    if (n <= kScoreMaxTokens) {
      auto scorer = model->session();
      if (!report(scorer.status(), "lm session")) return false;
      ctx.reset_peak_memory();
      const auto s0 = Clock::now();
      auto scores = scorer->score(prompt);
      const double score_ms = ms_since(s0);
      if (!report(scores.status(), "lm score")) return false;
      score_record = {{"op", "lm_score"},
                      {"variant", "transnormer"},
                      {"shape", {{"tokens", n}, {"model", model_shape}}},
                      {"median_ms", score_ms},
                      {"tokens_per_s", 1e3 * double(n) / score_ms},
                      {"peak_device_bytes", ctx.memory_stats().peak_used_bytes}};
    }
    auto session = model->session();
    if (!report(session.status(), "lm session")) return false;
    ctx.reset_peak_memory();
    const auto t0 = Clock::now();
    auto logits = session->prefill(prompt);
    const double prefill_ms = ms_since(t0);
    if (!report(logits.status(), "lm prefill")) return false;
    const uint64_t peak = ctx.memory_stats().peak_used_bytes;
    auto decode = time_decode(*session, std::move(logits).value(), decode_tokens);
    if (!report(decode.status(), "lm decode")) return false;
    if (n >= 4096) fit.emplace_back(double(n), prefill_ms);
    nlohmann::json prefill_record = {{"op", "lm_prefill"},
                                     {"variant", "transnormer"},
                                     {"shape", {{"tokens", n}, {"model", model_shape}}},
                                     {"median_ms", prefill_ms},
                                     {"tokens_per_s", 1e3 * double(n) / prefill_ms},
                                     {"peak_device_bytes", peak}};
    nlohmann::json decode_record = {{"op", "lm_decode"},
                                    {"variant", "transnormer"},
                                    {"shape", {{"position", n}, {"model", model_shape}}},
                                    {"median_ms", *decode},
                                    {"dispatches", session->decode_dispatches()},
                                    {"state_bytes", session->state_bytes()}};
    if (args.peers) {
      const nlohmann::json peer =
          run_python_json(std::string(RILL_SOURCE_DIR) + "/tools/peers/transnormer_torch.py",
                          model->options().precision == rill::lm::Precision::kF16
                              ? std::vector<std::string>{"--config", peer_config, "--weights", peer_weights, "--time",
                                                         std::to_string(n), "--dtype", "float16"}
                              : std::vector<std::string>{"--config", peer_config, "--weights", peer_weights, "--time",
                                                         std::to_string(n)});
      // The peer runs the weights as the activations' type; packed ones (int8, int4, f16 beside
      // f32 activations) are other work: both times are kept, without a ratio.
      const bool same_work =
          options.weights == rill::lm::WeightStorage::kPrecision ||
          (options.weights == rill::lm::WeightStorage::kF16 && model->options().precision == rill::lm::Precision::kF16);
      const std::string peer_weights_kind =
          model->options().precision == rill::lm::Precision::kF16 ? "float16" : "float32";
      if (peer.contains("prefill_seconds") && peer["prefill_seconds"].is_number()) {
        const double peer_ms = 1e3 * peer["prefill_seconds"].get<double>();
        prefill_record["peer_ms"] = peer_ms;
        if (same_work) prefill_record["speedup_vs_peer"] = peer_ms / prefill_ms;
        prefill_record["peer"] = peer;
      } else {
        prefill_record["peer_unavailable"] = peer.value("unavailable", "the PyTorch TransNormer gave no time");
      }
      if (peer.contains("decode_ms_per_token") && peer["decode_ms_per_token"].is_number()) {
        decode_record["peer_ms"] = peer["decode_ms_per_token"];
        if (same_work) decode_record["speedup_vs_peer"] = peer["decode_ms_per_token"].get<double>() / *decode;
      } else {
        decode_record["peer_unavailable"] = peer.value("decode_unavailable", "the PyTorch TransNormer gave no time");
      }
      for (nlohmann::json* record : {&prefill_record, &decode_record}) {
        (*record)["weights"] = rill::lm::weight_storage_name(options.weights);
        (*record)["peer_weights"] = peer_weights_kind;
      }
    }
    out.push_back(std::move(prefill_record));
    out.push_back(std::move(decode_record));
    std::fprintf(stderr, "lm transnormer: N %llu prefill %.0f ms (%.0f tok/s), peak %.1f MiB, decode %.2f ms/token\n",
                 (unsigned long long)n, prefill_ms, 1e3 * double(n) / prefill_ms, double(peak) / (1 << 20), *decode);
    if (score_record) {
      const double score_ms = (*score_record)["median_ms"].get<double>();
      (*score_record)["time_vs_prefill"] = score_ms / prefill_ms;
      out.push_back(std::move(*score_record));
      std::fprintf(stderr, "lm transnormer: N %llu score %.0f ms (%.2fx the prefill)\n", (unsigned long long)n,
                   score_ms, score_ms / prefill_ms);
    }
  }
  peer_dir.reset();
  if (fit.size() >= 2)
    out.push_back({{"op", "lm_prefill_fit"},
                   {"variant", "transnormer"},
                   {"shape", {{"from", 4096}, {"to", lengths.back()}}},
                   {"time_exponent", fitted_exponent(fit)}});
  if (args.lm_no_baseline) return true;

  // The softmax baseline: same widths, every attention layer full causal softmax attention.
  rill::lm::ModelConfig soft = config;
  soft.layer_kinds.assign(config.layers, rill::lm::LayerKind::kSoftmax);
  soft.lrpe_layers.clear();  // LRPE belongs to NormAttention layers (TransNormerLLM's configurations have it)
  auto soft_weights = rill::lm::Weights::random(soft, 1);
  if (!report(soft_weights.status(), "lm softmax weights")) return false;
  const uint64_t soft_prefill_max = quick ? 1024 : 4096;  // quadratic: longer prompts take minutes
  for (uint64_t n : lengths) {
    rill::lm::ModelOptions soft_options = options;
    soft_options.softmax_capacity = uint32_t(n + decode_tokens + 1);
    auto soft_model = rill::lm::Model::create(ctx, *soft_weights, soft_options);
    if (soft_model.status().code() == rill::StatusCode::kOutOfRange) {  // the growing cache no longer fits
      out.push_back({{"op", "lm_decode"},
                     {"variant", "softmax_baseline"},
                     {"shape", {{"position", n}}},
                     {"error", soft_model.status().message()}});
      std::fprintf(stderr, "lm softmax baseline: position %llu: %s\n", (unsigned long long)n,
                   soft_model.status().message().c_str());
      continue;
    }
    if (!report(soft_model.status(), "lm softmax model")) return false;
    auto session = soft_model->session();
    if (!report(session.status(), "lm softmax session")) return false;
    std::vector<float> logits(config.vocab, 0.0f);
    if (n <= soft_prefill_max) {
      const auto prompt = random_prompt(n, config.vocab);
      ctx.reset_peak_memory();
      const auto t0 = Clock::now();
      auto l = session->prefill(prompt);
      const double prefill_ms = ms_since(t0);
      if (!report(l.status(), "lm softmax prefill")) return false;
      logits = std::move(l).value();
      out.push_back({{"op", "lm_prefill"},
                     {"variant", "softmax_baseline"},
                     {"shape", {{"tokens", n}, {"model", model_shape_of(*soft_model)}}},
                     {"median_ms", prefill_ms},
                     {"tokens_per_s", 1e3 * double(n) / prefill_ms},
                     {"peak_device_bytes", ctx.memory_stats().peak_used_bytes}});
    } else if (!report(fast_forward(*session, n), "lm softmax fast-forward")) {
      return false;
    }
    auto decode = time_decode(*session, logits, decode_tokens);
    if (!report(decode.status(), "lm softmax decode")) return false;
    out.push_back({{"op", "lm_decode"},
                   {"variant", "softmax_baseline"},
                   {"shape", {{"position", n}, {"model", model_shape_of(*soft_model)}}},
                   {"median_ms", *decode},
                   {"state_bytes", session->state_bytes()},
                   {"position_reached_by", n <= soft_prefill_max ? "prefill" : "restored state"}});
    std::fprintf(stderr, "lm softmax baseline: position %llu decode %.2f ms/token, cache %.1f MiB\n",
                 (unsigned long long)n, *decode, double(session->state_bytes()) / (1 << 20));
  }
  return bench_decode_interleaved(ctx, config, *model, options, *soft_weights, quick, out);
}

}  // namespace rill_cli
