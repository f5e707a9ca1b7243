// Scoring a text with a TransNormer model (Session::score, lm::log_prob): the log-probability
// kernel against a double-precision softmax over odd shapes and vocabulary blocks, and a model's
// scores against the CPU reference's logits at every position, across segments, block boundaries,
// head blocks, chunks of the head's rows and packed weights.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "lm/lm_kernels.hpp"
#include "lm_test_models.hpp"
#include "op_test.hpp"
#include "rill/lm.hpp"

using rill::lm::LayerKind;
using rill::lm::ModelConfig;
using rill_test::make_model;
using rill_test::reference;
using rill_test::tiny;
using rill_test::tokens_of;

namespace {

// log softmax(row)[target] in double (NaN for a target past the row).
double log_prob_of(std::span<const float> row, uint32_t target) {
  if (target >= row.size()) return std::numeric_limits<double>::quiet_NaN();
  double most = -INFINITY, sum = 0.0;
  for (float x : row) most = std::max(most, double(x));
  for (float x : row) sum += std::exp(double(x) - most);
  return (double(row[target]) - most) - std::log(sum);
}

// The reference's log-probability of tokens[i + 1] at each position i < n - 1 (ref: [n, vocab]).
std::vector<double> reference_scores(const std::vector<float>& ref, std::span<const uint32_t> tokens, size_t vocab) {
  std::vector<double> out;
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    out.push_back(log_prob_of(std::span(ref).subspan(i * vocab, vocab), tokens[i + 1]));
  return out;
}

// Scores agree within tol (absolute: a log-probability's error is about twice its logits').
void check_scores(const std::vector<float>& got, const std::vector<double>& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    // NaN on either side (a lost target, or a reference with no score) is a mismatch, never a pass.
    const double error = std::isnan(got[i]) || std::isnan(want[i]) ? INFINITY : std::fabs(double(got[i]) - want[i]);
    if (error > worst) worst = error, at = i;
  }
  INFO(what << ": worst error " << worst << " at " << at);
  CHECK(worst <= tol);
}

rill::Tensor u32_tensor(rill::Context& ctx, const std::vector<uint32_t>& values) {
  auto t = ctx.tensor(rill::DType::kU32, {int64_t(values.size())});
  REQUIRE(t.is_ok());
  REQUIRE(ctx.upload(*t, std::span(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4)).is_ok());
  return std::move(t).value();
}

}  // namespace

GPU_TEST_CASE("lm token_log_probs equals a double softmax over odd shapes and vocabulary blocks", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  for (rill::DType dtype : rill_test::float_dtypes(ctx)) {
    for (uint32_t rows : {1u, 5u, 70u}) {
      for (uint32_t vocab : {1u, 37u, 1000u, 3001u}) {
        // One block, or the vocabulary split unevenly in two or three (the head's blocks).
        for (int parts : {1, 2, 3}) {
          if (uint32_t(parts) > vocab) continue;
          std::vector<uint32_t> firsts = {0};
          if (parts >= 2) firsts.push_back(vocab / 3 + 1);
          if (parts == 3) firsts.push_back(vocab - vocab / 5);
          firsts.push_back(vocab);
          const auto logits = rill_test::stored(
              rill_test::random_vector(size_t(rows) * vocab, rows * 7 + vocab + parts, -8.0f, 8.0f), dtype);
          std::vector<uint32_t> targets(rows);
          for (uint32_t r = 0; r < rows; ++r) targets[r] = (r * 2654435761u) % (vocab + 2);  // some >= vocab
          targets[0] = vocab - 1;
          const auto target_tensor = u32_tensor(ctx, targets);
          auto running = rill_test::empty_tensor(ctx, rill::DType::kF32, {rows, 4});
          auto out = rill_test::empty_tensor(ctx, rill::DType::kF32, {rows});
          // Rows in chunks of up to 33 (row_offset), each chunk's blocks in order.
          auto seq = ctx.sequence();
          REQUIRE(seq.is_ok());
          std::vector<rill::Tensor> kept;
          for (uint32_t first_row = 0; first_row < rows; first_row += 33) {
            const uint32_t chunk = std::min(33u, rows - first_row);
            for (size_t b = 0; b + 1 < firsts.size(); ++b) {
              const uint32_t count = firsts[b + 1] - firsts[b];
              std::vector<float> part(size_t(chunk) * count);
              for (uint32_t r = 0; r < chunk; ++r)
                std::memcpy(&part[size_t(r) * count], &logits[size_t(first_row + r) * vocab + firsts[b]],
                            count * sizeof(float));
              kept.push_back(rill_test::tensor_from(ctx, dtype, {chunk, count}, part));
              const auto made = rill::lm::detail::token_log_probs(*seq, kept.back(), target_tensor, running, out,
                                                                  {.row_offset = first_row,
                                                                   .first = firsts[b],
                                                                   .vocab = vocab,
                                                                   .first_block = b == 0,
                                                                   .last_block = b + 2 == firsts.size()});
              INFO(made.to_string());
              REQUIRE(made.is_ok());
            }
          }
          REQUIRE(seq->run().is_ok());
          const auto got = rill_test::read(ctx, out);
          INFO(rill::dtype_name(dtype) << " rows " << rows << " vocab " << vocab << " blocks " << parts);
          for (uint32_t r = 0; r < rows; ++r) {
            const double want = log_prob_of(std::span(logits).subspan(size_t(r) * vocab, vocab), targets[r]);
            INFO("row " << r << " target " << targets[r] << " got " << got[r] << " want " << want);
            if (std::isnan(want)) {
              CHECK(std::isnan(got[r]));
            } else {
              CHECK(std::fabs(double(got[r]) - want) <= 2e-5 + 1e-5 * std::fabs(want));
            }
          }
        }
      }
    }
  }
}

GPU_TEST_CASE("lm token_log_probs refuses mismatched shapes and blocks past the vocabulary", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  auto logits = rill_test::empty_tensor(ctx, rill::DType::kF32, {4, 10});
  const auto targets = u32_tensor(ctx, {1, 2, 3, 4});
  auto running = rill_test::empty_tensor(ctx, rill::DType::kF32, {4, 4});
  auto out = rill_test::empty_tensor(ctx, rill::DType::kF32, {4});
  auto short_out = rill_test::empty_tensor(ctx, rill::DType::kF32, {3});
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  using rill::lm::detail::token_log_probs;
  CHECK(token_log_probs(*seq, logits, targets, running, short_out, {.vocab = 10}).code() ==
        rill::StatusCode::kInvalidArgument);
  CHECK(token_log_probs(*seq, logits, targets, out, out, {.vocab = 10}).code() == rill::StatusCode::kInvalidArgument);
  const auto outside = token_log_probs(*seq, logits, targets, running, out, {.row_offset = 1, .vocab = 10});
  CHECK(outside.code() == rill::StatusCode::kInvalidArgument);
  CHECK(outside.message().find("rows [1, 5) are not all in") != std::string::npos);
  const auto past = token_log_probs(*seq, logits, targets, running, out, {.first = 5, .vocab = 12});
  CHECK(past.code() == rill::StatusCode::kInvalidArgument);
  CHECK(past.message().find("past the vocabulary") != std::string::npos);
  CHECK(token_log_probs(*seq, logits, targets, running, out, {.vocab = 10}).is_ok());
}

GPU_TEST_CASE("lm score equals the reference's log-probabilities across segments and blocks", "[lm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    ModelConfig c = tiny({LayerKind::kDiag, LayerKind::kNorm, LayerKind::kNorm});
    c.decay = {0.9f, 1.0f, 0.75f};
    const auto w = rill::lm::Weights::random(c, 17).value();
    auto model = make_model(ctx, w, {.prefill_segment = 16});
    const auto tokens = tokens_of(45, c.vocab, 2);
    const auto ref = reference(w, tokens);
    const auto want = reference_scores(ref, tokens, c.vocab);
    for (size_t n : {1, 2, 9, 16, 17, 45}) {
      auto s = model.session().value();
      const auto part = std::span(tokens).first(n);
      auto scores = s.score(part);
      INFO(scores.status().to_string());
      REQUIRE(scores.is_ok());
      check_scores(scores->log_probs, std::vector<double>(want.begin(), want.begin() + (n - 1)), 1e-3,
                   "n=" + std::to_string(n));
      CHECK(s.position() == n);
      // The last logits are prefill's, and the session goes on from where scoring left it.
      auto fresh = model.session().value();
      auto logits = fresh.prefill(part);
      REQUIRE(logits.is_ok());
      CHECK(scores->logits == *logits);
      if (n < tokens.size()) {
        auto next = s.decode(tokens[n]);
        auto next_fresh = fresh.decode(tokens[n]);
        REQUIRE((next.is_ok() && next_fresh.is_ok()));
        CHECK(*next == *next_fresh);
      }
    }
    // From a position inside a block (decoding steps to the boundary score on the host), and the
    // first token of a call from the previous call's logits through lm::log_prob.
    auto s = model.session().value();
    auto head = s.prefill(std::span(tokens).first(5));
    REQUIRE(head.is_ok());
    auto rest = s.score(std::span(tokens).subspan(5));
    REQUIRE(rest.is_ok());
    check_scores(rest->log_probs, std::vector<double>(want.begin() + 5, want.end()), 1e-3, "from position 5");
    auto first = rill::lm::log_prob(*head, tokens[5]);
    REQUIRE(first.is_ok());
    CHECK(std::fabs(*first - want[4]) <= 1e-3);
  }
}

GPU_TEST_CASE("lm score with the head in vocabulary blocks and packed weights", "[lm][gpu][own-limits]") {
  // The small-bindings profile splits the 1,500-token head into three blocks (test_lm_model.cpp).
  auto options = rill_test::validated_options();
  options.limit_profile = "small-bindings";
  auto small = rill_test::make_context(options);
  ModelConfig c = tiny({LayerKind::kNorm, LayerKind::kDiag});
  c.width = 32;
  c.heads = 2;
  c.ffn_width = 64;
  c.vocab = 1500;
  for (bool tied : {true, false}) {
    c.tie_embeddings = tied;
    REQUIRE(c.validate().is_ok());
    INFO((tied ? "tied" : "untied"));
    const auto w = rill::lm::Weights::random(c, tied ? 23 : 24).value();
    const auto tokens = tokens_of(80, c.vocab, 5);
    auto model = make_model(small, w, {.prefill_segment = 64});
    auto scores = model.session().value().score(tokens);
    INFO(scores.status().to_string());
    REQUIRE(scores.is_ok());
    check_scores(scores->log_probs, reference_scores(reference(w, tokens), tokens, c.vocab), 1e-3, "dense");
    // Packed weights: scoring equals the decoding steps' logits of the same model, token by token.
    using rill::lm::WeightStorage;
    for (WeightStorage storage : {WeightStorage::kF16, WeightStorage::kInt8, WeightStorage::kInt4}) {
      INFO(rill::lm::weight_storage_name(storage));
      auto packed = make_model(small, w, {.weights = storage, .int8_group = 2, .int4_group = 2, .prefill_segment = 64});
      auto scored = packed.session().value().score(tokens);
      REQUIRE(scored.is_ok());
      auto stepped = packed.session().value();
      std::vector<double> want;
      for (size_t i = 0; i + 1 < tokens.size(); ++i) {
        auto logits = stepped.decode(tokens[i]);
        REQUIRE(logits.is_ok());
        want.push_back(rill::lm::log_prob(*logits, tokens[i + 1]).value());
      }
      check_scores(scored->log_probs, want, 1e-3, "packed");
    }
  }
}

GPU_TEST_CASE("lm score walks a large vocabulary's head in chunks of rows", "[lm][gpu]") {
  // 20,000 tokens in f32 are 80 KB a row: the head's logits come 192 rows at a time (16 MiB holds
  // 209, in whole tiles of 64), so a 600-token segment takes four chunks, the last a partial one.
  auto ctx = rill_test::make_context();
  ModelConfig c = tiny({LayerKind::kNorm});
  c.width = 8;
  c.heads = 2;
  c.ffn_width = 16;
  c.vocab = 20000;
  REQUIRE(c.validate().is_ok());
  const auto w = rill::lm::Weights::random(c, 31).value();
  const auto tokens = tokens_of(600, c.vocab, 6);
  auto model = make_model(ctx, w, {.prefill_segment = 600});
  auto scores = model.session().value().score(tokens);
  INFO(scores.status().to_string());
  REQUIRE(scores.is_ok());
  check_scores(scores->log_probs, reference_scores(reference(w, tokens), tokens, c.vocab), 1e-3, "chunked head");
}

GPU_TEST_CASE("lm score stops on request, refuses bad tokens and leaves the session as it was", "[lm][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill::lm::Weights::random(tiny({LayerKind::kDiag, LayerKind::kNorm}), 3).value();
  auto model = make_model(ctx, w, {.prefill_segment = 8});
  const auto tokens = tokens_of(30, w.config().vocab, 1);
  auto s = model.session().value();
  auto bad = tokens;
  bad[7] = w.config().vocab;
  const auto refused = s.score(bad);
  CHECK(refused.status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(refused.status().message().find("lm score: token 7") != std::string::npos);
  CHECK(s.position() == 0);
  CHECK(s.score({}).status().code() == rill::StatusCode::kInvalidArgument);
  int segments = 0;
  const auto stopped = s.score(tokens, {.stop = [&] { return ++segments > 2; }});
  CHECK(stopped.status().code() == rill::StatusCode::kCancelled);
  CHECK(stopped.status().message().find("lm score: stopped at position 16") != std::string::npos);
  CHECK(s.position() == 16);
  // Scoring the rest goes on from there; its first token scores from the logits the stop kept.
  const auto want = reference_scores(reference(w, tokens), tokens, w.config().vocab);
  auto first = rill::lm::log_prob(s.last_logits(), tokens[16]);
  REQUIRE(first.is_ok());
  CHECK(*first == Approx(want[15]).margin(1e-3));
  auto rest = s.score(std::span(tokens).subspan(16));
  REQUIRE(rest.is_ok());
  check_scores(rest->log_probs, std::vector<double>(want.begin() + 16, want.end()), 1e-3, "after the stop");
}

TEST_CASE("lm log_prob is a log softmax and refuses tokens past the logits", "[lm]") {
  const std::vector<float> logits = {1.0f, -2.0f, 0.5f, 30.0f};
  double total = 0.0;
  for (uint32_t t = 0; t < logits.size(); ++t) total += std::exp(rill::lm::log_prob(logits, t).value());
  CHECK(total == Approx(1.0).epsilon(1e-12));
  CHECK(rill::lm::log_prob(logits, 3).value() ==
        Approx(-(std::exp(-29.0) + std::exp(-32.0) + std::exp(-29.5))).margin(1e-15));
  CHECK(rill::lm::log_prob(logits, 4).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(rill::lm::log_prob({}, 0).status().code() == rill::StatusCode::kInvalidArgument);
  // A ruled-out token is -inf; NaN, +inf or nothing possible is no distribution.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> masked = {0.0f, -inf, 0.0f};
  CHECK(rill::lm::log_prob(masked, 1).value() == -std::numeric_limits<double>::infinity());
  CHECK(rill::lm::log_prob(masked, 0).value() == Approx(std::log(0.5)));
  for (const std::vector<float>& bad :
       {std::vector<float>{0.0f, std::nanf("")}, std::vector<float>{inf, 0.0f}, std::vector<float>{-inf, -inf}})
    CHECK(rill::lm::log_prob(bad, 0).status().code() == rill::StatusCode::kInvalidArgument);
}

GPU_TEST_CASE("lm fork copies the state: continuations score as in fresh sessions, the original goes on unchanged",
              "[lm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    ModelConfig c = tiny({LayerKind::kDiag, LayerKind::kNorm, LayerKind::kSoftmax});
    c.decay = {0.9f, 1.0f, 0.75f};
    const auto w = rill::lm::Weights::random(c, 41).value();
    auto model = make_model(ctx, w, {.prefill_segment = 8, .softmax_capacity = 64});
    const auto prompt = tokens_of(13, c.vocab, 7);  // ends inside a block: the block cache is state too
    auto prompted = [&] {
      auto s = model.session().value();
      REQUIRE(s.prefill(prompt).is_ok());
      return s;
    };
    auto base = prompted();
    for (const auto& continuation : {tokens_of(5, c.vocab, 8), tokens_of(11, c.vocab, 9), std::vector<uint32_t>{3}}) {
      auto fork = base.fork();
      INFO(fork.status().to_string());
      REQUIRE(fork.is_ok());
      CHECK(fork->position() == prompt.size());
      CHECK(fork->state_bytes() == base.state_bytes());
      auto scores = fork->score(continuation);
      REQUIRE(scores.is_ok());
      auto want = prompted().score(continuation);
      REQUIRE(want.is_ok());
      CHECK(scores->log_probs == want->log_probs);  // the same state, the same kernels: the same bits
      CHECK(scores->logits == want->logits);
    }
    // The forks' work left the original where it was.
    CHECK(base.position() == prompt.size());
    auto next = base.decode(5);
    auto want = prompted().decode(5);
    REQUIRE((next.is_ok() && want.is_ok()));
    CHECK(*next == *want);
    auto empty = model.session().value().fork();
    REQUIRE(empty.is_ok());
    CHECK(empty->position() == 0);
  }
}
