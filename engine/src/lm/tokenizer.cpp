// Tokenizer: bytes, or a SentencePiece model (lm/sentencepiece_model.hpp).
#include "rill/tokenizer.hpp"

#include "core/file_io.hpp"
#include "core/host_memory_guard.hpp"
#include "lm/sentencepiece_model.hpp"

namespace rill::lm {

namespace {
constexpr uint64_t kMaxModelBytes = 64ull << 20;  // published tokenizer.model files are about 1 MiB
}

struct Tokenizer::Impl {
  std::unique_ptr<detail::SentencePieceModel> sp;  // null: bytes

  uint32_t vocab() const { return sp ? sp->size() : 256u; }
  Result<std::string> decode(std::span<const uint32_t> tokens) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] >= vocab())
        return invalid_argument("tokenizer: token " + std::to_string(tokens[i]) + " at " + std::to_string(i) +
                                " is past the vocabulary (" + std::to_string(vocab()) + ")");
    if (!sp) return std::string(tokens.begin(), tokens.end());
    return sp->decode(tokens);
  }
};

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::bytes() { return Tokenizer(std::make_unique<Impl>()); }

Result<Tokenizer> Tokenizer::load_sentencepiece(const std::string& path) {
  return rill::detail::host_memory_guarded("tokenizer load", [&]() -> Result<Tokenizer> {
    // Read it ourselves (bounded size, clear errors), then parse from memory.
    RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path, kMaxModelBytes));
    auto impl = std::make_unique<Impl>();
    RILL_ASSIGN_OR_RETURN(impl->sp, detail::SentencePieceModel::parse(bytes, path));
    return Tokenizer(std::move(impl));
  });
}

Result<std::vector<uint32_t>> Tokenizer::encode(std::string_view text, bool add_bos) const {
  return rill::detail::host_memory_guarded("tokenizer encode", [&]() -> Result<std::vector<uint32_t>> {
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
  });
}

namespace {

// Whether `text` ends inside a character that later bytes could complete: a lead byte with fewer
// continuation bytes after it than it announces, or (SentencePiece's decoding of such bytes) the
// replacement character U+FFFD.
bool ends_inside_character(std::string_view text, bool replaced) {
  if (replaced && text.size() >= 3 && text.substr(text.size() - 3) == "\xEF\xBF\xBD") return true;
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    const auto b = uint8_t(text[text.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back for its lead
    const size_t length = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    return length > back;
  }
  return false;
}

}  // namespace

Result<std::string> Tokenizer::decode(std::span<const uint32_t> tokens) const {
  return rill::detail::host_memory_guarded("tokenizer decode", [&] { return impl_->decode(tokens); });
}

uint32_t Tokenizer::vocab_size() const { return impl_->vocab(); }

std::optional<uint32_t> Tokenizer::bos() const { return impl_->sp ? impl_->sp->bos() : std::nullopt; }

std::optional<uint32_t> Tokenizer::eos() const { return impl_->sp ? impl_->sp->eos() : std::nullopt; }

bool Tokenizer::is_bytes() const { return !impl_->sp; }

TextStream::TextStream(const Tokenizer& tokenizer) : tokenizer_(tokenizer.impl_) {}

// The window is the run of tokens emitted last (settled) and the tokens after it. Its decoding
// starts with the settled run's own (a SentencePiece decoding drops the first piece's space in
// both alike), so what the new tokens add is what follows: emitted once it ends on a whole
// character, when the new tokens become the settled run.
Result<std::string> TextStream::push(uint32_t token) {
  return rill::detail::host_memory_guarded("text stream", [&] { return push_unguarded(token); });
}

Result<std::string> TextStream::push_unguarded(uint32_t token) {
  if (token >= tokenizer_->vocab())
    return invalid_argument("text stream: token " + std::to_string(token) + " is past the vocabulary (" +
                            std::to_string(tokenizer_->vocab()) + ")");
  // Worked out on a copy, taken only at the end with moves that cannot fail: a failed push (out of
  // memory) leaves the stream as it was, so that pushing the token again neither loses nor repeats
  // text. The window holds at most the settled run and kMostHeld tokens.
  std::vector<uint32_t> window = window_;
  window.push_back(token);
  RILL_ASSIGN_OR_RETURN(std::string text, tokenizer_->decode(window));
  // A character takes at most 4 bytes, a token each: a run of hundreds that still ends inside one (a
  // model repeating a lead byte, or byte pieces that are no UTF-8) will not complete it, and goes out
  // as it decodes. Held on, every push would decode the whole growing run again.
  constexpr size_t kMostHeld = 256;
  if (ends_inside_character(text, tokenizer_->sp != nullptr)) {
    if (window.size() - settled_ < kMostHeld) {
      window_ = std::move(window);
      return std::string();
    }
    // Out as it decodes, and the stream starts afresh after it: bytes that follow could decode
    // together with these (SentencePiece joins byte pieces) and change text already out.
    std::string added =
        text.compare(0, settled_text_.size(), settled_text_) == 0 ? text.substr(settled_text_.size()) : text;
    restart();
    return added;
  }
  if (text.compare(0, settled_text_.size(), settled_text_) != 0)
    return internal_error("text stream: the decoding of a run of tokens changed when tokens followed it");
  std::string added = text.substr(settled_text_.size());
  // The new tokens become the settled run, unless they decode to nothing (control tokens): a
  // SentencePiece decoding drops the space of its first visible piece, so a run must show text
  // to stand in for the text before it.
  const auto fresh = std::span<const uint32_t>(window).subspan(settled_);
  RILL_ASSIGN_OR_RETURN(std::string fresh_text, tokenizer_->decode(fresh));
  if (!fresh_text.empty()) {
    window.erase(window.begin(), window.begin() + std::ptrdiff_t(settled_));
    window_ = std::move(window);
    settled_ = window_.size();
    settled_text_ = std::move(fresh_text);
  } else if (!settled_text_.empty()) {
    // Invisible tokens after visible text: their text (if any, a lone space) is out, and the
    // settled run stays the context. Kept, a long run of them (a model repeating </s>) would grow
    // the window without end.
    window_.resize(settled_);
  } else if (window.size() < kMostHeld) {
    // At the start they stay: a lone "\u2581" there decodes to nothing, yet keeps the next word's
    // space (SentencePiece models that keep extra whitespace).
    settled_text_ = std::move(text);
    window_ = std::move(window);
    settled_ = window_.size();
  } else {
    restart();  // a long run of them at the start: no text to lose, and no end to the window
  }
  return added;
}

std::string TextStream::finish() {
  Result<std::string> rest = held_back();
  restart();
  return rest.is_ok() ? std::move(rest).value() : std::string();
}

Result<std::string> TextStream::held_back() const {
  return rill::detail::host_memory_guarded("text stream", [&]() -> Result<std::string> {
    RILL_ASSIGN_OR_RETURN(std::string text, tokenizer_->decode(window_));  // every token was checked when pushed
    return text.size() >= settled_text_.size() ? text.substr(settled_text_.size()) : std::string();
  });
}

void TextStream::restart() {
  window_.clear();
  settled_ = 0;
  settled_text_.clear();
}

}  // namespace rill::lm
