// The precompiled character maps' check (see sentencepiece_charsmap.hpp). A map is
// <trie bytes, u32 LE><double-array trie of u32 units><normalized strings, each NUL-terminated>;
// a lookup (darts-clone's commonPrefixSearch) starts at unit 0 and, from a unit u at index i, reads
// the units at (i ^ offset(u)) ^ c for the text's next byte c, going on where the label matches and
// taking the leaf's value as an index into the normalized strings.
#include "lm/sentencepiece_charsmap.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace rill::lm::detail {
namespace {

// The double array's unit layout (darts-clone, as libsentencepiece embeds it).
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t value_of(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label_of(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t offset_of(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// The protobuf wire format, as far as locating length-delimited fields needs.
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

  // The next field: its number, and its bytes when it is length-delimited (wire type 2). nullopt
  // when the framing is broken or uses groups (wire types 3 and 4, which no model file has).
  struct Field {
    uint64_t number = 0;
    std::optional<std::span<const uint8_t>> bytes;
  };
  std::optional<Field> next() {
    const auto key = varint();
    if (!key) return std::nullopt;
    Field f{*key >> 3, std::nullopt};
    switch (*key & 7) {
      case 0:
        if (!varint()) return std::nullopt;
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

Status broken(const char* spec, const std::string& what) {
  return data_loss(std::string("the model's ") + spec + " character map " + what + " (a lookup would read outside it)");
}

Status check_charsmap(std::span<const uint8_t> blob, const char* spec) {
  if (blob.empty()) return Status::ok();  // no map: no normalization
  if (blob.size() <= 4) return broken(spec, "is shorter than its size word");
  uint32_t trie_bytes = 0;
  for (int b = 0; b < 4; ++b) trie_bytes |= uint32_t(blob[size_t(b)]) << (8 * b);
  if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
    return broken(spec,
                  "gives its trie " + std::to_string(trie_bytes) + " bytes of " + std::to_string(blob.size() - 4));
  const size_t units = trie_bytes / 4;
  std::vector<uint32_t> unit(units);
  std::memcpy(unit.data(), blob.data() + 4, trie_bytes);  // little-endian, as the library reads it
  const std::span<const uint8_t> normalized = blob.subspan(4 + trie_bytes);
  // A string at `at` ends within the bytes when a NUL follows it: when the last NUL does. Found once
  // (a search per match would cost the matches times the bytes: minutes for a crafted file).
  const auto last_nul = std::find(normalized.rbegin(), normalized.rend(), uint8_t{0});
  const size_t strings_end = size_t(normalized.rend() - last_nul);  // 0 without any NUL

  // Every unit a lookup can reach, from the root, each once.
  std::vector<uint8_t> reached(units, 0);
  std::vector<size_t> pending{0};
  reached[0] = 1;
  while (!pending.empty()) {
    const size_t i = pending.back();
    pending.pop_back();
    const size_t base = i ^ offset_of(unit[i]);
    if ((base | 0xFF) >= units)
      return broken(spec, "has a trie node whose children lie past its " + std::to_string(units) + " units");
    for (uint32_t c = 0; c < 256; ++c) {
      const size_t child = base ^ c;
      const uint32_t u = unit[child];
      if (label_of(u) != c) continue;  // the lookup stops here for this byte
      if (has_leaf(u)) {
        const size_t leaf = child ^ offset_of(u);
        if (leaf >= units) return broken(spec, "has a match whose value lies past the trie");
        const uint32_t at = value_of(unit[leaf]);
        if (at >= strings_end)
          return broken(spec, "names a normalized string at " + std::to_string(at) + " that is not within its " +
                                  std::to_string(normalized.size()) + " bytes");
      }
      if (!reached[child]) {
        reached[child] = 1;
        pending.push_back(child);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status check_precompiled_charsmaps(std::span<const uint8_t> model_proto) {
  // ModelProto: normalizer_spec = 3, denormalizer_spec = 5; NormalizerSpec: precompiled_charsmap = 2.
  WireReader model(model_proto);
  while (!model.done()) {
    const auto field = model.next();
    if (!field) return data_loss("not a SentencePiece model: its protobuf framing is broken");
    if ((field->number != 3 && field->number != 5) || !field->bytes) continue;
    const char* spec = field->number == 3 ? "normalization" : "denormalization";
    WireReader normalizer(*field->bytes);
    while (!normalizer.done()) {
      const auto inner = normalizer.next();
      if (!inner) return data_loss(std::string("not a SentencePiece model: its ") + spec + " spec's framing is broken");
      if (inner->number == 2 && inner->bytes) RILL_RETURN_IF_ERROR(check_charsmap(*inner->bytes, spec));
    }
  }
  return Status::ok();
}

}  // namespace rill::lm::detail
