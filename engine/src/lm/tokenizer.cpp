// Tokenizer: bytes, or a SentencePiece model (lm/sentencepiece_model.hpp).
#include "rill/tokenizer.hpp"

#include "core/file_io.hpp"
#include "lm/sentencepiece_model.hpp"

namespace rill::lm {

namespace {
constexpr uint64_t kMaxModelBytes = 64ull << 20;  // published tokenizer.model files are about 1 MiB
}

struct Tokenizer::Impl {
  std::unique_ptr<detail::SentencePieceModel> sp;  // null: bytes
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::bytes() { return Tokenizer(std::make_unique<Impl>()); }

Result<Tokenizer> Tokenizer::load_sentencepiece(const std::string& path) {
  // Read it ourselves (bounded size, clear errors), then parse from memory.
  RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path, kMaxModelBytes));
  auto impl = std::make_unique<Impl>();
  RILL_ASSIGN_OR_RETURN(impl->sp, detail::SentencePieceModel::parse(bytes, path));
  return Tokenizer(std::move(impl));
}

Result<std::vector<uint32_t>> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<uint32_t> out;
  if (add_bos)
    if (auto b = bos()) out.push_back(*b);
  if (!impl_->sp) {
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(text.data()),
               reinterpret_cast<const uint8_t*>(text.data()) + text.size());
    return out;
  }
  RILL_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, impl_->sp->encode(text));
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

Result<std::string> Tokenizer::decode(std::span<const uint32_t> tokens) const {
  const uint32_t vocab = vocab_size();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      return invalid_argument("tokenizer: token " + std::to_string(tokens[i]) + " at " + std::to_string(i) +
                              " is past the vocabulary (" + std::to_string(vocab) + ")");
  if (!impl_->sp) return std::string(tokens.begin(), tokens.end());
  return impl_->sp->decode(tokens);
}

uint32_t Tokenizer::vocab_size() const { return impl_->sp ? impl_->sp->size() : 256u; }

std::optional<uint32_t> Tokenizer::bos() const { return impl_->sp ? impl_->sp->bos() : std::nullopt; }

std::optional<uint32_t> Tokenizer::eos() const { return impl_->sp ? impl_->sp->eos() : std::nullopt; }

bool Tokenizer::is_bytes() const { return !impl_->sp; }

}  // namespace rill::lm
