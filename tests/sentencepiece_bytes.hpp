// SentencePiece model files written field by field in the protobuf wire format, without
// libsentencepiece: the tokenizer tests' and the fuzzer's handmade models (six pieces: <unk> <s>
// </s>, the word boundary, a and b), with or without a normalization map.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace rill_test::spm {

inline std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += char(0x80 | (v & 0x7F));
  return out + char(v);
}
inline std::string field_bytes(int number, const std::string& bytes) {
  return varint(uint64_t(number) << 3 | 2) + varint(bytes.size()) + bytes;
}
inline std::string field_varint(int number, uint64_t v) { return varint(uint64_t(number) << 3) + varint(v); }
inline std::string field_float(int number, float v) {
  std::string out = varint(uint64_t(number) << 3 | 5);
  out.append(reinterpret_cast<const char*>(&v), 4);
  return out;
}

// A unigram model with the normalization map `charsmap` (identity when empty), and a seventh
// normal piece when `extra_piece` is given.
inline std::string model(const std::string& charsmap, const std::optional<std::string>& extra_piece = {}) {
  std::string m;
  const std::tuple<const char*, float, int> pieces[] = {{"<unk>", 0.0f, 2},         {"<s>", 0.0f, 3}, {"</s>", 0.0f, 3},
                                                        {"\xE2\x96\x81", -1.0f, 1}, {"a", -2.0f, 1},  {"b", -2.0f, 1}};
  for (const auto& [text, score, type] : pieces)  // type: 1 normal, 2 unknown, 3 control
    m += field_bytes(1, field_bytes(1, text) + field_float(2, score) + field_varint(3, uint64_t(type)));
  if (extra_piece) m += field_bytes(1, field_bytes(1, *extra_piece) + field_float(2, -3.0f) + field_varint(3, 1));
  m += field_bytes(2, field_varint(3, 1));  // trainer spec: unigram
  std::string normalizer = field_bytes(1, charsmap.empty() ? "identity" : "handmade");
  if (!charsmap.empty()) normalizer += field_bytes(2, charsmap);
  return m + field_bytes(3, normalizer + field_varint(3, 1) + field_varint(4, 1) + field_varint(5, 1));
}

// A map of "a" to "b": a double array of 256 units whose root's child 'a' has a leaf naming the
// normalized string at 0.
struct CharsMap {
  std::vector<uint32_t> units = std::vector<uint32_t>(256, 0);
  std::string normalized = std::string("b\0", 2);
  CharsMap() {
    units['a'] = 'a' | (1u << 8) | (1u << 10);  // label 'a', a leaf, children at 'a' ^ 1
    units['a' ^ 1] = (1u << 31) | 0;            // the leaf: the string at 0
  }
  std::string blob() const {
    std::string out;
    const uint32_t bytes = uint32_t(units.size() * 4);
    out.append(reinterpret_cast<const char*>(&bytes), 4);
    out.append(reinterpret_cast<const char*>(units.data()), bytes);
    return out + normalized;
  }
};

}  // namespace rill_test::spm
