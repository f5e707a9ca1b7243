// The rill tool's UTF-8 printing of byte-level text (tools/rill/utf8_stream.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "../tools/rill/utf8_stream.hpp"

namespace {

// Everything the stream prints for `bytes`, pushed one at a time, then finished.
std::string print(const std::string& bytes) {
  rill_cli::Utf8Stream stream;
  std::string out;
  for (const char c : bytes) out += stream.push(uint8_t(c));
  return out + stream.finish();
}

}  // namespace

TEST_CASE("valid UTF-8 prints as itself, and only once a sequence is complete", "[tools][utf8]") {
  const std::string text = "caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b \xf0\x9f\x99\x82\n\ttab";  // café 模型 🙂
  CHECK(print(text) == text);
  rill_cli::Utf8Stream stream;
  CHECK(stream.push(0xE6).empty());
  CHECK(stream.push(0xA8).empty());
  CHECK(stream.push(0x8B) == "\xe6\xa8\x8b");
}

TEST_CASE("what is not text is escaped, and the output stays valid UTF-8", "[tools][utf8]") {
  CHECK(print("a\\b") == "a\\\\b");
  CHECK(print(std::string("\x01\x7f", 2)) == "\\x01\\x7F");
  CHECK(print("\x80") == "\\x80");                                   // a lone continuation byte
  CHECK(print("\xc0\xaf") == "\\xC0\\xAF");                          // an overlong form's lead cannot lead
  CHECK(print("\xe0\x80\x80") == "\\xE0\\x80\\x80");                 // overlong three-byte form
  CHECK(print("\xed\xa0\x80") == "\\xED\\xA0\\x80");                 // a UTF-16 surrogate
  CHECK(print("\xf4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");        // past U+10FFFF
  CHECK(print("\xe6\xa8x") == "\\xE6\\xA8x");                        // broken off by ASCII
  CHECK(print("\xe6\xa8\xe6\xa8\x8b") == "\\xE6\\xA8\xe6\xa8\x8b");  // broken off by a new lead
  CHECK(print("\xf0\x9f\x99") == "\\xF0\\x9F\\x99");                 // the stream ends inside a sequence
}

TEST_CASE("tokens past the bytes print as their number", "[tools][utf8]") {
  rill_cli::Utf8Stream stream;
  CHECK(stream.push('a') == "a");
  CHECK(stream.push(0xC3).empty());
  CHECK(stream.push(300) == "\\xC3<300>");
}

TEST_CASE("SentencePiece text reaches a terminal without its control bytes", "[tools][utf8]") {
  using rill_cli::without_controls;
  CHECK(without_controls("plain text\n\twith tabs") == "plain text\n\twith tabs");
  CHECK(without_controls(std::string("a\x1b[2Jb\0c\x7f", 9)) == "a\\x1B[2Jb\\x00c\\x7F");
  CHECK(without_controls("caf\xC3\xA9 \\ ok") == "caf\xC3\xA9 \\ ok");  // UTF-8 and backslashes as they are
}
