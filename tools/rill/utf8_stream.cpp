// Utf8Stream (utf8_stream.hpp), after the well-formed byte sequences of Unicode's table 3-7.
#include "utf8_stream.hpp"

#include <cstdio>

namespace rill_cli {
namespace {

std::string escaped_byte(uint8_t b) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02X", b);
  return buffer;
}

std::string escaped_bytes(const std::string& bytes) {
  std::string out;
  for (const char c : bytes) out += escaped_byte(uint8_t(c));
  return out;
}

// The length of the sequence a lead byte opens: 1 for ASCII, 0 for a byte that cannot lead.
size_t sequence_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Whether `b` may follow `lead` as the sequence's second byte (excludes overlong forms,
// surrogates and code points past U+10FFFF); later bytes only need to be continuations.
bool valid_second(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

std::string ascii(uint8_t b) {
  if (b == '\\') return "\\\\";
  if (b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7f)) return std::string(1, char(b));
  return escaped_byte(b);
}

}  // namespace

std::string without_controls(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto b = uint8_t(c);
    out += (b < 0x20 && b != '\n' && b != '\t') || b == 0x7f ? escaped_byte(b) : std::string(1, c);
  }
  return out;
}

std::string Utf8Stream::push(uint32_t token) {
  if (token > 0xFF) return finish() + "<" + std::to_string(token) + ">";
  const auto b = uint8_t(token);
  std::string out;
  if (!pending_.empty()) {
    const bool fits = pending_.size() == 1 ? valid_second(uint8_t(pending_[0]), b) : (b >= 0x80 && b <= 0xBF);
    if (fits) {
      pending_ += char(b);
      if (pending_.size() < length_) return {};
      out = std::move(pending_);
      pending_.clear();
      return out;
    }
    out = finish();  // a broken sequence: its bytes escaped, then this byte on its own
  }
  const size_t length = sequence_length(b);
  if (length == 1) return out + ascii(b);
  if (length == 0) return out + escaped_byte(b);
  pending_ = std::string(1, char(b));
  length_ = length;
  return out;
}

std::string Utf8Stream::finish() {
  std::string out = escaped_bytes(pending_);
  pending_.clear();
  return out;
}

}  // namespace rill_cli
