// SentencePieceModel over libsentencepiece, whose status codes become Statuses.
#include "lm/sentencepiece_model.hpp"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "lm/protobuf_wire.hpp"
#include "lm/sentencepiece_charsmap.hpp"

namespace rill::lm::detail {
namespace {

std::optional<uint32_t> id_or_none(int id) { return id < 0 ? std::nullopt : std::optional<uint32_t>(uint32_t(id)); }

// libsentencepiece throws (its darts-clone trie builder does, on a piece starting with a NUL byte)
// where it would return a status: every call into it goes through here, and a throw becomes a
// status naming what threw.
template <typename F>
Status library_call(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return resource_exhausted(std::string("tokenizer: out of host memory while ") + what);
  } catch (const std::exception& e) {
    return data_loss(std::string("tokenizer: libsentencepiece failed while ") + what + ": " + e.what());
  } catch (...) {
    return data_loss(std::string("tokenizer: libsentencepiece failed while ") + what);
  }
}

class LibSentencePiece final : public SentencePieceModel {
 public:
  sentencepiece::SentencePieceProcessor sp;

  Result<std::vector<uint32_t>> encode(std::string_view text) const override {
    std::vector<int> ids;
    RILL_RETURN_IF_ERROR(library_call("encoding", [&] {
      const auto s = sp.Encode(text, &ids);
      return s.ok() ? Status::ok() : invalid_argument("tokenizer: cannot encode the text: " + s.ToString());
    }));
    return std::vector<uint32_t>(ids.begin(), ids.end());
  }
  Result<std::string> decode(std::span<const uint32_t> tokens) const override {
    std::string text;
    RILL_RETURN_IF_ERROR(library_call("decoding", [&] {
      const auto s = sp.Decode(std::vector<int>(tokens.begin(), tokens.end()), &text);
      return s.ok() ? Status::ok() : invalid_argument("tokenizer: cannot decode: " + s.ToString());
    }));
    return text;
  }
  uint32_t size() const override { return uint32_t(sp.GetPieceSize()); }
  std::optional<uint32_t> bos() const override { return id_or_none(sp.bos_id()); }
  std::optional<uint32_t> eos() const override { return id_or_none(sp.eos_id()); }
};

// libsentencepiece's PrefixMatcher keeps one lookup's user-defined matches in an array of this many
// (0.1.97) and reads as many as its trie reports.
constexpr size_t kMaxUserDefinedMatches = 64;

// DataLoss when more user-defined pieces than that are prefixes of one another ("a", "aa", ...):
// the first text that starts with the longest would overflow the library's array.
Status check_user_defined_pieces(std::span<const uint8_t> model_proto) {
  // sentencepiece_model.proto: ModelProto.pieces, SentencePiece.piece and .type (NORMAL 1 .. BYTE 6)
  constexpr uint64_t kPieces = 1, kPieceText = 1, kPieceType = 3, kUserDefined = 4;
  constexpr int32_t kFirstType = 1, kLastType = 6;
  std::vector<std::string_view> user_defined;  // each up to its first NUL
  WireReader model(model_proto);
  while (!model.done()) {
    const auto field = model.next();
    if (!field) return data_loss("not a SentencePiece model: its protobuf framing is broken");
    if (field->number != kPieces || !field->bytes) continue;
    std::optional<std::span<const uint8_t>> text;
    uint64_t type = 1;  // NORMAL, the default
    WireReader piece(*field->bytes);
    while (!piece.done()) {
      const auto f = piece.next();
      if (!f) return data_loss("not a SentencePiece model: a piece's protobuf framing is broken");
      if (f->number == kPieceText && f->bytes) text = f->bytes;  // the last occurrence wins, as in protobuf
      // A proto2 enum: the value cut to 32 bits, and one that names no type left aside (the type
      // stays what it was), as the library's parser does.
      if (f->number == kPieceType && f->value)
        if (const auto v = int32_t(uint32_t(*f->value)); v >= kFirstType && v <= kLastType) type = uint64_t(v);
    }
    if (type != kUserDefined || !text) continue;
    // The library's prefix matcher keys its trie by C strings: a piece ends at its first NUL.
    std::string_view key(reinterpret_cast<const char*>(text->data()), text->size());
    key = key.substr(0, key.find('\0'));
    if (!key.empty()) user_defined.push_back(key);  // an empty key the library refuses itself
  }
  // In sorted order every prefix of a piece comes before it; the stack holds the chain of prefixes
  // of the current piece.
  std::sort(user_defined.begin(), user_defined.end());
  std::vector<std::string_view> chain;
  for (const std::string_view p : user_defined) {
    while (!chain.empty() && !p.starts_with(chain.back())) chain.pop_back();
    if (!chain.empty() && chain.back() == p) continue;  // a repeated piece is one trie key
    chain.push_back(p);
    if (chain.size() > kMaxUserDefinedMatches)
      return data_loss("the model has " + std::to_string(chain.size()) +
                       " user-defined pieces that are prefixes of one another, more than the " +
                       std::to_string(kMaxUserDefinedMatches) + " libsentencepiece holds in one lookup");
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<SentencePieceModel>> SentencePieceModel::parse(std::span<const uint8_t> serialized,
                                                                      const std::string& label) {
  try {  // a crafted file's maps may be large: their checks' memory is an error, not an exception
    for (const Status& checked : {check_precompiled_charsmaps(serialized), check_user_defined_pieces(serialized)})
      if (!checked.is_ok()) return checked.with_context("tokenizer '" + label + "'");
  } catch (const std::bad_alloc&) {
    return resource_exhausted("tokenizer '" + label + "': no host memory to check its normalization maps");
  }
  auto model = std::make_unique<LibSentencePiece>();
  RILL_RETURN_IF_ERROR(library_call("loading the model", [&] {
                         const auto s = model->sp.LoadFromSerializedProto(
                             std::string_view(reinterpret_cast<const char*>(serialized.data()), serialized.size()));
                         return s.ok() ? Status::ok() : data_loss("not a SentencePiece model: " + s.ToString());
                       }).with_context("tokenizer '" + label + "'"));
  if (model->sp.GetPieceSize() <= 0) return data_loss("tokenizer '" + label + "' has no pieces");
  return std::unique_ptr<SentencePieceModel>(std::move(model));
}

}  // namespace rill::lm::detail
