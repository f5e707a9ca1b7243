// Tokenizers: bytes, and SentencePiece models trained here with libsentencepiece's trainer (no
// model can be downloaded): encode/decode round trips of UTF-8 text, byte fallback, BOS/EOS, bad
// tokens and bad files, and the C API's size-query convention.
#include <sentencepiece_trainer.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "access.hpp"
#include "rill/rill.h"
#include "rill/tokenizer.hpp"
#include "sentencepiece_bytes.hpp"
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

namespace {

using rill_test::spm::CharsMap;
rill::Result<rill::lm::Tokenizer> load_model_text(const std::string& model) {
  const std::filesystem::path path = rill_test::temp_path("handmade-spm");
  std::ofstream(path, std::ios::binary) << model;
  auto t = rill::lm::Tokenizer::load_sentencepiece(path.string());
  std::filesystem::remove(path);
  return t;
}

}  // namespace

TEST_CASE("tokenizer: a SentencePiece normalization map is checked before the library reads it", "[tokenizer]") {
  // The trained model's map (NFKC) passes; so does a small handmade one, which the library then
  // applies ("a" is normalized to "b").
  REQUIRE(rill::lm::Tokenizer::load_sentencepiece(trained_model()).is_ok());
  const auto plain = load_model_text(rill_test::spm::model(""));
  INFO(plain.status().to_string());
  REQUIRE(plain.is_ok());
  CHECK(plain->encode("a").value() != plain->encode("b").value());
  const auto mapped = load_model_text(rill_test::spm::model(CharsMap().blob()));
  INFO(mapped.status().to_string());
  REQUIRE(mapped.is_ok());
  CHECK(mapped->encode("a").value() == plain->encode("b").value());

  // A map whose 255 nodes each reach all 255 others' matches, all naming one 1 MiB string: a loop,
  // so a lookup of 33 bytes or more overflowed the library's 32 matches. Refused, quickly (a search
  // of the strings per match took minutes at this size).
  CharsMap dense;
  dense.units.assign(512, 0);
  dense.units[0] = 256u << 10;        // the root's children at 256 ^ c
  dense.units[256] = 1u << 31;        // a leaf: the string at 0
  for (uint32_t c = 1; c < 256; ++c)  // label c, a leaf, children at (256 + c) ^ c = 256
    dense.units[256 + c] = (c << 10) | (1u << 8) | c;
  dense.normalized = std::string(1 << 20, 'b') + std::string(1, '\0');
  const auto dense_map = load_model_text(rill_test::spm::model(dense.blob()));
  REQUIRE_FALSE(dense_map.is_ok());
  CHECK_THAT(dense_map.status().message(), Catch::Contains("loops back through a match"));

  // A chain of matches "a", "aa", ...: the library holds 32 per lookup. 32 load and normalize a long
  // run of "a"; 33 are refused (the 33rd match was written past the library's array).
  auto chain = [](uint32_t matches) {
    CharsMap m;  // node k (label 'a', a leaf) at 256 k + 'a', its children at 256 (k + 1)
    m.units.assign(256 * size_t(matches + 2), 0);
    m.units[0] = 256u << 10;
    for (uint32_t k = 1; k <= matches; ++k) {
      const uint32_t at = 256 * k + 'a', base = 256 * (k + 1);
      m.units[at] = ((at ^ base) << 10) | (1u << 8) | 'a';
      m.units[base] = 1u << 31;  // its leaf: the string at 0
    }
    return m.blob();
  };
  const auto chain32 = load_model_text(rill_test::spm::model(chain(32)));
  INFO(chain32.status().to_string());
  REQUIRE(chain32.is_ok());
  CHECK(chain32->encode(std::string(100, 'a')).is_ok());
  const auto chain33 = load_model_text(rill_test::spm::model(chain(33)));
  REQUIRE_FALSE(chain33.is_ok());
  CHECK_THAT(chain33.status().message(), Catch::Contains("nests 33 matches in one lookup, more than the 32"));

  // A tag past 32 bits: protobuf drops the high bits and reads the normalizer spec (field 3), which
  // a 64-bit reading took for another field and left unchecked.
  {
    CharsMap m;
    m.units[0] = 0xFFFFFC00u | (1u << 9);  // the root's children far past the end
    const std::string normal = rill_test::spm::model("");
    const std::string spec = rill_test::spm::field_bytes(1, "handmade") + rill_test::spm::field_bytes(2, m.blob());
    const std::string hidden =
        normal + std::string("\x9A\x80\x80\x80\x10", 5) + rill_test::spm::varint(spec.size()) + spec;
    const auto t = load_model_text(hidden);
    REQUIRE_FALSE(t.is_ok());
    CHECK_THAT(t.status().message(), Catch::Contains("protobuf framing is broken"));
  }

  // User-defined pieces that are prefixes of one another: the library holds 64 per lookup.
  auto user_defined = [](uint32_t count) {
    std::string m = rill_test::spm::model("");
    for (uint32_t n = 1; n <= count; ++n)
      m +=
          rill_test::spm::field_bytes(1, rill_test::spm::field_bytes(1, std::string(n, 'c')) +
                                             rill_test::spm::field_float(2, 0.0f) + rill_test::spm::field_varint(3, 4));
    return m;
  };
  const auto user64 = load_model_text(user_defined(64));
  INFO(user64.status().to_string());
  REQUIRE(user64.is_ok());
  CHECK(user64->encode(std::string(100, 'c')).is_ok());
  const auto user65 = load_model_text(user_defined(65));
  REQUIRE_FALSE(user65.is_ok());
  CHECK_THAT(user65.status().message(), Catch::Contains("65 user-defined pieces that are prefixes of one another"));
  // Read as the library reads them: a type that names none (99, 4 + 2^32 cut to 4) and a piece
  // ending at its first NUL for the trie.
  auto disguised = [](uint32_t count, int form) {
    std::string m = rill_test::spm::model("");
    for (uint32_t n = 1; n <= count; ++n) {
      const std::string text = form == 2 ? std::string(n, 'c') + std::string("\0x", 2) : std::string(n, 'c');
      const std::string type = form == 0   ? rill_test::spm::field_varint(3, 4) + rill_test::spm::field_varint(3, 99)
                               : form == 1 ? rill_test::spm::field_varint(3, 4 + (uint64_t(1) << 32))
                                           : rill_test::spm::field_varint(3, 4);
      m += rill_test::spm::field_bytes(
          1, rill_test::spm::field_bytes(1, text) + rill_test::spm::field_float(2, 0.0f) + type);
    }
    return m;
  };
  for (int form : {0, 1, 2}) {
    INFO("form " << form);
    const auto t = load_model_text(disguised(65, form));
    REQUIRE_FALSE(t.is_ok());
    CHECK_THAT(t.status().message(), Catch::Contains("65 user-defined pieces that are prefixes of one another"));
  }

  // Maps whose lookups would leave the table: each refused with a message, none crashes.
  std::vector<std::pair<std::string, std::string>> broken;
  CharsMap m;
  m.units[0] = 0xFFFFFC00u | (1u << 9);  // the root's children far past the end
  broken.push_back({m.blob(), "children lie past"});
  m = CharsMap();
  m.units['a'] = 'a' | (1u << 8) | (4000u << 10);  // 'a' and its leaf lead past the end
  broken.push_back({m.blob(), "value lies past the trie"});
  m.units['a'] &= ~(1u << 8);  // the same without the leaf
  broken.push_back({m.blob(), "children lie past"});
  m = CharsMap();
  m.units['a' ^ 1] = (1u << 31) | 7;  // a string past the normalized bytes
  broken.push_back({m.blob(), "normalized string at 7"});
  m = CharsMap();
  m.normalized = "b";  // no terminating NUL
  broken.push_back({m.blob(), "normalized string at 0"});
  m = CharsMap();
  m.units.resize(3);  // a trie of 3 units: the root's children cannot fit
  broken.push_back({m.blob(), "children lie past"});
  std::string oversized = CharsMap().blob();
  oversized[1] = char(0x7F);  // the trie's size word claims more bytes than the map holds
  broken.push_back({oversized, "gives its trie"});
  broken.push_back({std::string("\x04\0\0", 3), "shorter than its size word"});
  // A piece starting with a NUL byte: libsentencepiece's trie builder takes it for an empty key and
  // throws (found by the fuzzer), which must come back a status.
  broken.push_back({"", "libsentencepiece failed"});
  for (const auto& [blob, why] : broken) {
    INFO(why);
    const bool nul_piece = blob.empty();
    const auto t =
        load_model_text(nul_piece ? rill_test::spm::model("", std::string("\0\0", 2)) : rill_test::spm::model(blob));
    REQUIRE_FALSE(t.is_ok());
    CHECK(t.status().code() == rill::StatusCode::kDataLoss);
    CHECK_THAT(t.status().message(), Catch::Contains(why));
    if (!nul_piece) CHECK_THAT(t.status().message(), Catch::Contains("character map"));
  }
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

namespace {

// Whether `s` is whole UTF-8 characters (every lead byte followed by all its continuation bytes).
bool whole_characters(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = uint8_t(s[i]);
    const size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((uint8_t(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// Streams `tokens`, checking each piece is whole characters where `text_only`; returns the pieces.
std::vector<std::string> stream(rill::lm::TextStream& s, const std::vector<uint32_t>& tokens, bool text_only) {
  std::vector<std::string> pieces;
  for (uint32_t t : tokens) {
    auto piece = s.push(t);
    INFO(piece.status().to_string());
    REQUIRE(piece.is_ok());
    if (text_only) CHECK(whole_characters(*piece));
    pieces.push_back(*piece);
  }
  pieces.push_back(s.finish());
  return pieces;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string all;
  for (const auto& p : pieces) all += p;
  return all;
}

}  // namespace

TEST_CASE("text stream: a byte model's UTF-8 comes out in whole characters", "[tokenizer]") {
  const auto t = rill::lm::Tokenizer::bytes();
  rill::lm::TextStream s(t);
  const std::string text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80!";
  const auto tokens = t.encode(text).value();
  const auto pieces = stream(s, tokens, true);
  CHECK(joined(pieces) == text);
  CHECK(pieces[1].empty());        // the first byte of the two-byte character waits
  CHECK(pieces[2] == "\xC3\xA9");  // and comes out with the second
  CHECK(pieces[size_t(text.find('!'))] == "!");
  CHECK(pieces.back().empty());  // nothing held back at the end
  // Bytes that cannot be text pass as they are; a character cut off at the end comes out at finish.
  CHECK(s.push(0xFF).value() == "\xFF");
  CHECK(s.push(0x80).value() == "\x80");
  CHECK(s.push(0xE2).value().empty());
  CHECK(s.push(0x9C).value().empty());
  CHECK(s.finish() == "\xE2\x9C");
  // A bad token is refused and leaves the stream as it was.
  CHECK(s.push(0xC3).value().empty());
  CHECK(s.push(256).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(s.push(0xA9).value() == "\xC3\xA9");
  CHECK(s.finish().empty());
  // A lead byte repeated never completes a character: held back at most 256 tokens, then out as it
  // is (each push decodes a bounded run, not everything since the first).
  std::vector<uint32_t> leads(600, 0xC3);
  const auto lead_pieces = stream(s, leads, false);
  CHECK(lead_pieces[254].empty());
  CHECK(lead_pieces[255] == std::string(256, '\xC3'));
  CHECK(lead_pieces[511] == std::string(256, '\xC3'));
  CHECK(joined(lead_pieces) == std::string(600, '\xC3'));
  // Any bytes at all (a random model's) join to themselves.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::vector<uint32_t> random(200);
    for (size_t i = 0; i < random.size(); ++i) random[i] = uint32_t((i * 2654435761u + seed * 40503u) >> 7) & 0xFF;
    const auto random_pieces = stream(s, random, false);
    INFO("seed " << seed);
    CHECK(joined(random_pieces) == std::string(random.begin(), random.end()));
  }
}

TEST_CASE("text stream: SentencePiece pieces join to the whole decoding, spaces and byte fallback included",
          "[tokenizer]") {
  std::optional<rill::lm::TextStream> s;
  std::vector<uint32_t> tokens;
  std::string expected;
  uint32_t vocab = 0;
  {
    auto t = rill::lm::Tokenizer::load_sentencepiece(trained_model());
    REQUIRE(t.is_ok());
    const std::string text =
        "Linear attention keeps a state of constant size \xE2\x9C\x93 per head, Gr\xC3\xB6\xC3\x9F"
        "e \xE4\xB8\xAD\xE6\x96\x87 line 7.";
    tokens = t->encode(text).value();
    expected = t->decode(tokens).value();
    REQUIRE(expected == text);
    vocab = t->vocab_size();
    s.emplace(*t);  // the stream keeps the model: the tokenizer goes out of scope here
  }
  const auto pieces = stream(*s, tokens, true);
  CHECK(joined(pieces) == expected);
  size_t with_space = 0, empty = 0;
  for (const auto& p : pieces) {
    with_space += p.size() > 1 && p[0] == ' ';
    empty += p.empty();
  }
  CHECK(with_space >= 1);  // some pieces carry SentencePiece's space ("\xE2\x96\x81line" as " line")
  CHECK(empty >= 3);       // the check mark's and the CJK characters' byte pieces waited
  // Any token sequence (a random model's) joins to its decoding too.
  auto t = rill::lm::Tokenizer::load_sentencepiece(trained_model()).value();
  // A lead byte's piece repeated past the hold (U+FFFD each) goes out; bytes that complete a character
  // after it decode apart, with no error (they joined the held run's decoding before).
  const auto chinese = t.encode("\xE4\xB8\xAD").value();  // byte fallback: <0xE4> <0xB8> <0xAD>
  size_t at = 0;
  while (at < chinese.size() && t.decode(std::span(chinese).subspan(at, 1)).value() != "\xEF\xBF\xBD") ++at;
  REQUIRE(at + 3 == chinese.size());
  std::vector<uint32_t> stuck(300, chinese[at]);
  stuck.insert(stuck.end(), chinese.begin() + std::ptrdiff_t(at) + 1, chinese.end());
  rill::lm::TextStream held(t);
  const auto stuck_pieces = stream(held, stuck, false);
  CHECK(stuck_pieces[255].size() == 256 * 3);  // 256 replacement characters
  // Runs of invisible tokens (a model repeating </s>) between words: they add no text, and the
  // stream keeps only the last visible run as context (it decoded the whole growing run each push).
  REQUIRE(t.eos().has_value());
  std::vector<uint32_t> quiet = t.encode("Linear attention").value();
  quiet.insert(quiet.end(), 3000, *t.eos());
  const std::vector<uint32_t> words = t.encode(" keeps \xE2\x9C\x93 a state").value();
  for (uint32_t token : words) {
    quiet.push_back(token);
    quiet.push_back(*t.eos());
  }
  rill::lm::TextStream q(t);
  {  // the window stays the last visible run, however many invisible tokens follow it
    const auto visible = t.encode("Linear attention").value();
    for (uint32_t token : visible) REQUIRE(q.push(token).is_ok());
    for (int i = 0; i < 3000; ++i) REQUIRE(q.push(*t.eos()).is_ok());
    CHECK(rill::detail::Access::window_tokens(q) <= visible.size());
    q.restart();
  }
  const auto quiet_pieces = stream(q, quiet, true);
  CHECK(joined(quiet_pieces) == t.decode(quiet).value());
  CHECK(joined(quiet_pieces).find("Linear attention keeps ") == 0);  // byte pieces split by </s> decode apart
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::vector<uint32_t> random(60);
    for (size_t i = 0; i < random.size(); ++i)
      random[i] = uint32_t((i * 7919u + seed * 104729u + i * i * seed) % vocab);
    rill::lm::TextStream r(t);
    INFO("seed " << seed);
    CHECK(joined(stream(r, random, false)) == t.decode(random).value());
  }
}

TEST_CASE("text stream C API: push, read with size queries, finish, errors", "[tokenizer]") {
  rill_tokenizer* t = nullptr;
  REQUIRE(rill_tokenizer_load(nullptr, &t) == RILL_OK);  // bytes
  rill_text_stream* s = nullptr;
  REQUIRE(rill_text_stream_create(t, &s) == RILL_OK);
  rill_tokenizer_destroy(t);  // the stream keeps what it needs
  const std::string text = "ok \xE2\x9C\x93";
  std::string got;
  char buffer[8];
  size_t length = 99;
  for (unsigned char c : text) {
    REQUIRE(rill_text_stream_push(s, c) == RILL_OK);
    REQUIRE(rill_text_stream_read(s, buffer, sizeof buffer, &length) == RILL_OK);
    got.append(buffer, length);
    if (c == 0xE2 || c == 0x9C) CHECK(length == 0);  // the check mark waits for its last byte
  }
  CHECK(got == text);
  // A size query leaves the text in the stream; a too-small buffer too.
  REQUIRE(rill_text_stream_push(s, 'a') == RILL_OK);
  REQUIRE(rill_text_stream_push(s, 'b') == RILL_OK);
  CHECK(rill_text_stream_read(s, buffer, 1, &length) == RILL_OUT_OF_RANGE);
  CHECK(length == 2);
  REQUIRE(rill_text_stream_read(s, buffer, sizeof buffer, &length) == RILL_OK);
  CHECK(std::string(buffer, length) == "ab");
  REQUIRE(rill_text_stream_push(s, 0xC3) == RILL_OK);
  REQUIRE(rill_text_stream_finish(s) == RILL_OK);  // an incomplete character comes out at the end
  CHECK(rill_text_stream_read(s, nullptr, 0, &length) == RILL_OUT_OF_RANGE);
  CHECK(length == 1);
  REQUIRE(rill_text_stream_read(s, buffer, 1, &length) == RILL_OK);
  CHECK((length == 1 && uint8_t(buffer[0]) == 0xC3));
  REQUIRE(rill_text_stream_read(s, buffer, 0, &length) == RILL_OK);
  CHECK(length == 0);
  CHECK(rill_text_stream_push(s, 256) == RILL_INVALID_ARGUMENT);
  CHECK(rill_text_stream_push(nullptr, 65) == RILL_INVALID_ARGUMENT);
  CHECK(rill_text_stream_read(s, nullptr, 4, &length) == RILL_INVALID_ARGUMENT);
  rill_text_stream* none = reinterpret_cast<rill_text_stream*>(&length);
  CHECK(rill_text_stream_create(nullptr, &none) == RILL_INVALID_ARGUMENT);
  CHECK(none == nullptr);
  rill_text_stream_destroy(s);
  rill_text_stream_destroy(nullptr);
}
