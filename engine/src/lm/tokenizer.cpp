// Tokenizer: bytes, or SentencePiece through libsentencepiece (whose status codes become Statuses).
#include "rill/tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "core/file_io.hpp"

namespace rill::lm {

namespace {
constexpr uint64_t kMaxModelBytes = 64ull << 20;  // published tokenizer.model files are about 1 MiB
}

struct Tokenizer::Impl {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp;  // null: bytes
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
  impl->sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto s = impl->sp->LoadFromSerializedProto(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (!s.ok()) return data_loss("tokenizer '" + path + "' is not a SentencePiece model: " + s.ToString());
  if (impl->sp->GetPieceSize() <= 0) return data_loss("tokenizer '" + path + "' has no pieces");
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
  std::vector<int> ids;
  const auto s = impl_->sp->Encode(text, &ids);
  if (!s.ok()) return invalid_argument("tokenizer: cannot encode the text: " + s.ToString());
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
  std::string text;
  const auto s = impl_->sp->Decode(std::vector<int>(tokens.begin(), tokens.end()), &text);
  if (!s.ok()) return invalid_argument("tokenizer: cannot decode: " + s.ToString());
  return text;
}

uint32_t Tokenizer::vocab_size() const { return impl_->sp ? uint32_t(impl_->sp->GetPieceSize()) : 256u; }

std::optional<uint32_t> Tokenizer::bos() const {
  if (!impl_->sp || impl_->sp->bos_id() < 0) return std::nullopt;
  return uint32_t(impl_->sp->bos_id());
}

std::optional<uint32_t> Tokenizer::eos() const {
  if (!impl_->sp || impl_->sp->eos_id() < 0) return std::nullopt;
  return uint32_t(impl_->sp->eos_id());
}

bool Tokenizer::is_bytes() const { return !impl_->sp; }

}  // namespace rill::lm
