// FNV-1a 64: a stable hash of bytes, the same on every platform and build, for tags that files
// carry (config and weights fingerprints, the pipeline cache's checksum) and for seeding. Not a
// defence against a deliberate collision.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rill {

class Fnv1a {
 public:
  Fnv1a& add(std::span<const uint8_t> bytes) {
    for (uint8_t b : bytes) h_ = (h_ ^ b) * 0x100000001b3ull;
    return *this;
  }
  Fnv1a& add(std::string_view text) {
    return add(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  Fnv1a& add_u64(uint64_t v) {  // little-endian, whatever the host
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(v >> (8 * i));
    return add(b);
  }
  uint64_t value() const { return h_; }
  std::string hex() const {  // 16 lowercase hex digits
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(16, '0');
    uint64_t h = h_;
    for (int i = 15; i >= 0; --i, h >>= 4) out[size_t(i)] = kHex[h & 15];
    return out;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

inline uint64_t fnv1a(std::span<const uint8_t> bytes) { return Fnv1a().add(bytes).value(); }
inline uint64_t fnv1a(std::string_view text) { return Fnv1a().add(text).value(); }

}  // namespace rill
