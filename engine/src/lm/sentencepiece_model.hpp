// The SentencePiece side of lm::Tokenizer, behind an interface so that a build without
// libsentencepiece (RILL_WITH_SENTENCEPIECE=OFF, as the Windows cross build) keeps byte tokenizers
// and refuses SentencePiece models with a clear error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status.hpp"

namespace rill::lm::detail {

class SentencePieceModel {
 public:
  // Parses a serialized model (a tokenizer.model file's bytes); `label` names it in errors.
  static Result<std::unique_ptr<SentencePieceModel>> parse(std::span<const uint8_t> serialized,
                                                           const std::string& label);
  virtual ~SentencePieceModel() = default;

  virtual Result<std::vector<uint32_t>> encode(std::string_view text) const = 0;
  virtual Result<std::string> decode(std::span<const uint32_t> tokens) const = 0;  // tokens < size()
  virtual uint32_t size() const = 0;
  virtual std::optional<uint32_t> bos() const = 0;
  virtual std::optional<uint32_t> eos() const = 0;
};

}  // namespace rill::lm::detail
