// SentencePieceModel in a build without libsentencepiece (RILL_WITH_SENTENCEPIECE=OFF): every model
// is refused with Unimplemented, the status code for "this build cannot do it".
#include "lm/sentencepiece_model.hpp"

namespace rill::lm::detail {

Result<std::unique_ptr<SentencePieceModel>> SentencePieceModel::parse(std::span<const uint8_t>,
                                                                      const std::string& label) {
  return unimplemented("tokenizer '" + label +
                       "': this build of rill has no SentencePiece support (configured with "
                       "RILL_WITH_SENTENCEPIECE=OFF); byte tokenizers still work");
}

}  // namespace rill::lm::detail
