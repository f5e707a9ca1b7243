// SentencePieceModel over libsentencepiece, whose status codes become Statuses.
#include "lm/sentencepiece_model.hpp"

#include <sentencepiece_processor.h>

#include <exception>
#include <new>
#include <string>

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

}  // namespace

Result<std::unique_ptr<SentencePieceModel>> SentencePieceModel::parse(std::span<const uint8_t> serialized,
                                                                      const std::string& label) {
  if (Status checked = check_precompiled_charsmaps(serialized); !checked.is_ok())
    return checked.with_context("tokenizer '" + label + "'");
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
