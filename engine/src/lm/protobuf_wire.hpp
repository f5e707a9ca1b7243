// Reading the protobuf wire format as far as the checks of a SentencePiece model file need:
// walking a message's fields and taking length-delimited ones (sub-messages, strings) as bytes.
// The checks run before libsentencepiece parses the file, so each field must be read as protobuf
// reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace rill::lm::detail {

class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool done() const { return at_ == bytes_.size(); }

  std::optional<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && at_ < bytes_.size(); shift += 7) {
      const uint8_t b = bytes_[at_++];
      v |= uint64_t(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return std::nullopt;
  }

  // The next field: its number, and its bytes or value for wire types 2 and 0. nullopt
  // when the framing is broken or uses groups (wire types 3 and 4, which no model file has).
  struct Field {
    uint64_t number = 0;
    std::optional<std::span<const uint8_t>> bytes;  // wire type 2
    std::optional<uint64_t> value;                  // wire type 0 (varint)
  };
  std::optional<Field> next() {
    const auto key = varint();
    // protobuf reads a tag as 32 bits and drops the rest: a longer one would name another field
    // here than in the library (a check that skips the field the library reads).
    if (!key || *key > UINT32_MAX) return std::nullopt;
    Field f{*key >> 3, std::nullopt};
    switch (*key & 7) {
      case 0:
        f.value = varint();
        if (!f.value) return std::nullopt;
        return f;
      case 1:
        return skip(8) ? std::optional<Field>(f) : std::nullopt;
      case 5:
        return skip(4) ? std::optional<Field>(f) : std::nullopt;
      case 2: {
        const auto length = varint();
        if (!length || *length > bytes_.size() - at_) return std::nullopt;
        f.bytes = bytes_.subspan(at_, size_t(*length));
        at_ += size_t(*length);
        return f;
      }
      default:
        return std::nullopt;
    }
  }

 private:
  bool skip(size_t n) {
    if (n > bytes_.size() - at_) return false;
    at_ += n;
    return true;
  }
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

}  // namespace rill::lm::detail
