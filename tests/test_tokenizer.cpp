// Tokenizers: bytes, and SentencePiece models trained here with libsentencepiece's trainer (no
// model can be downloaded): encode/decode round trips of UTF-8 text, byte fallback, BOS/EOS, bad
// tokens and bad files, and the C API's size-query convention.
#include <sentencepiece_trainer.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rill/rill.h"
#include "rill/tokenizer.hpp"
#include "temp_path.hpp"

namespace {

// A small SentencePiece model with byte fallback, trained once per test run.
const std::string& trained_model() {
  static const std::string path = [] {
    const std::filesystem::path dir = rill_test::temp_dir();
    std::ofstream corpus(dir / "corpus.txt");
    for (int i = 0; i < 200; ++i)
      corpus << "Linear attention keeps a state of constant size per head, line " << i << ".\n"
             << "Die lineare Aufmerksamkeit behält einen Zustand fester Größe.\n";
    corpus.close();
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + (dir / "corpus.txt").string() + " --model_prefix=" + (dir / "tiny").string() +
        " --vocab_size=320 --hard_vocab_limit=false --byte_fallback=true --character_coverage=1.0 --minloglevel=2");
    REQUIRE(status.ok());
    return (dir / "tiny.model").string();
  }();
  return path;
}

}  // namespace

TEST_CASE("tokenizer: bytes are the identity on any text", "[tokenizer]") {
  const auto t = rill::lm::Tokenizer::bytes();
  const std::string text = "h\xC3\xA9llo \xE2\x9C\x93 \x01";
  const auto tokens = t.encode(text).value();
  REQUIRE(tokens.size() == text.size());
  CHECK(tokens[1] == 0xC3);
  CHECK(t.decode(tokens).value() == text);
  CHECK(t.vocab_size() == 256);
  CHECK(!t.bos().has_value());
  CHECK(t.encode(text, true).value().size() == text.size());  // no BOS to add
  const std::vector<uint32_t> bad = {65, 256};
  CHECK(t.decode(bad).status().code() == rill::StatusCode::kInvalidArgument);
}

TEST_CASE("tokenizer: SentencePiece round-trips UTF-8, falls back to bytes, adds BOS", "[tokenizer]") {
  auto t = rill::lm::Tokenizer::load_sentencepiece(trained_model());
  INFO(t.status().to_string());
  REQUIRE(t.is_ok());
  const uint32_t vocab = t->vocab_size();
  CHECK(vocab > 256);  // the 256 byte pieces, the corpus's characters and some words
  REQUIRE(t->bos().has_value());
  REQUIRE(t->eos().has_value());
  // Words of the corpus become few pieces; characters it never saw (the check mark, the CJK) go
  // through byte fallback and still come back exactly.
  for (const std::string& text : {std::string("Linear attention keeps a state"), std::string("Größe \xE2\x9C\x93 \xE4\xB8\xAD")}) {
    const auto tokens = t->encode(text).value();
    CHECK(t->decode(tokens).value() == text);
    const auto with_bos = t->encode(text, true).value();
    REQUIRE(with_bos.size() == tokens.size() + 1);
    CHECK(with_bos[0] == *t->bos());
  }
  CHECK(t->encode("Linear attention keeps a state").value().size() < 30);  // fewer pieces than bytes
  const std::vector<uint32_t> bad = {5, vocab};
  const auto refused = t->decode(bad);
  CHECK(refused.status().code() == rill::StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("token " + std::to_string(vocab) + " at 1"));
}

TEST_CASE("tokenizer: missing and malformed model files are refused by name", "[tokenizer]") {
  CHECK(rill::lm::Tokenizer::load_sentencepiece("/nonexistent/tokenizer.model").status().code() ==
        rill::StatusCode::kNotFound);
  const std::filesystem::path bad = rill_test::temp_path("bad-spm");
  std::ofstream(bad) << "this is not a protobuf \xFF\xFF\xFF";
  const auto s = rill::lm::Tokenizer::load_sentencepiece(bad.string()).status();
  CHECK(s.code() == rill::StatusCode::kDataLoss);
  CHECK_THAT(s.message(), Catch::Contains(bad.string()));
  std::filesystem::remove(bad);
}

TEST_CASE("tokenizer C API: size queries, round trip, errors", "[tokenizer]") {
  rill_tokenizer* t = nullptr;
  REQUIRE(rill_tokenizer_load(trained_model().c_str(), &t) == RILL_OK);
  const std::string text = "state of constant size \xE2\x9C\x93";
  size_t count = 0;
  CHECK(rill_tokenizer_encode(t, text.data(), text.size(), 1, nullptr, 0, &count) == RILL_OUT_OF_RANGE);
  REQUIRE(count > 1);
  std::vector<uint32_t> tokens(count);
  REQUIRE(rill_tokenizer_encode(t, text.data(), text.size(), 1, tokens.data(), tokens.size(), &count) == RILL_OK);
  uint32_t vocab = 0;
  int64_t bos = -2, eos = -2;
  REQUIRE(rill_tokenizer_info(t, &vocab, &bos, &eos) == RILL_OK);
  CHECK(vocab > 256);
  CHECK(int64_t(tokens[0]) == bos);
  size_t length = 0;
  CHECK(rill_tokenizer_decode(t, tokens.data() + 1, count - 1, nullptr, 0, &length) == RILL_OUT_OF_RANGE);
  std::string back(length, '\0');
  REQUIRE(rill_tokenizer_decode(t, tokens.data() + 1, count - 1, back.data(), back.size(), &length) == RILL_OK);
  CHECK(back == text);
  const uint32_t past = vocab;
  CHECK(rill_tokenizer_decode(t, &past, 1, back.data(), back.size(), &length) == RILL_INVALID_ARGUMENT);
  rill_tokenizer_destroy(t);
  rill_tokenizer* none = nullptr;
  CHECK(rill_tokenizer_load("/nonexistent.model", &none) != RILL_OK);
  CHECK(none == nullptr);
}
