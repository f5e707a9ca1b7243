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
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::lm
