// Tokenizers for rill::lm models: bytes (rill's own models: token = byte, vocabulary 256) or a
// SentencePiece model (tokenizer.model, as the published TransNormerLLM checkpoints ship it), read
// with Debian's libsentencepiece. Text is UTF-8 in and out; decoding gives the bytes the model
// chose, as they are (with SentencePiece's byte fallback, a piece can be part of a UTF-8 character).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/export.hpp"
#include "rill/status.hpp"

namespace rill::detail {
struct Access;  // the engine's own access to the implementation (engine/src/access.hpp)
}

namespace rill::lm {

class RILL_API Tokenizer {
 public:
  static Tokenizer bytes();
  // The file is untrusted: a missing, unreadable or malformed model is an error naming it.
  static Result<Tokenizer> load_sentencepiece(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Tokens of `text`, after the beginning-of-sequence token when add_bos (and the model has one).
  Result<std::vector<uint32_t>> encode(std::string_view text, bool add_bos = false) const;
  // Text of `tokens`; a token past the vocabulary is InvalidArgument naming it.
  Result<std::string> decode(std::span<const uint32_t> tokens) const;
  uint32_t vocab_size() const;
  std::optional<uint32_t> bos() const;
  std::optional<uint32_t> eos() const;
  bool is_bytes() const;

 private:
  friend class TextStream;
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Text of tokens as a model writes them, for showing it while it is written: push() returns what
// each token adds, finish() what was held back at the end. Joined, the pieces are decode() of all
// the tokens: SentencePiece's spaces come out where they belong, and a character whose bytes span
// several tokens (byte fallback, or a byte model's UTF-8) waits for the token that completes it,
// so no piece ends inside a character. Bytes that are not valid UTF-8 pass as they are (a byte
// model) or as decode() replaces them (SentencePiece, which may hold them back until a token ends
// the run); a run of 256 tokens that still ends inside a character (one takes at most 4) goes out
// as it decodes and the stream starts afresh: only then may the pieces differ from decode() (the
// bytes that follow decode apart, and SentencePiece drops a space before the next word, as at a
// start). Each push decodes only the tokens since the text last settled.
// The stream keeps its tokenizer's model alive (the Tokenizer may go first).
class RILL_API TextStream {
 public:
  explicit TextStream(const Tokenizer& tokenizer);

  // InvalidArgument for a token past the vocabulary, the stream unchanged.
  Result<std::string> push(uint32_t token);
  // The text held back (a character still incomplete at the end); the stream then starts afresh.
  // Where decoding it fails (out of host memory) that text is lost: held_back() and restart() do
  // not lose it.
  std::string finish();
  // finish() in two steps, for a caller that must place the text before the stream forgets it: the
  // text held back (an error, out of host memory, the stream unchanged); then the fresh start.
  Result<std::string> held_back() const;
  void restart();

 private:
  Result<std::string> push_unguarded(uint32_t token);  // push() but for running out of host memory
  friend struct rill::detail::Access;  // tests read how many tokens the window holds
  std::shared_ptr<const Tokenizer::Impl> tokenizer_;
  std::vector<uint32_t> window_;  // the tokens since the text last settled, the settled run first
  size_t settled_ = 0;            // window_[0, settled_): emitted already, kept as context
  std::string settled_text_;      // their decoding on their own
};

}  // namespace rill::lm
