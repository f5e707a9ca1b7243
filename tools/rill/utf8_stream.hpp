// Text from a byte-level model, printed as its tokens arrive: complete, valid UTF-8 sequences pass
// as they are (so any language prints as itself), a backslash is doubled, and what is not text is
// escaped: control bytes other than newline and tab, and bytes that cannot start or continue a
// sequence, as \xNN; tokens past the 256 bytes as <N>. The output is always valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rill_cli {

// `text` for a terminal: control bytes other than newline and tab (an escape sequence a model wrote,
// a NUL) as \xNN; everything else as it is.
std::string without_controls(std::string_view text);

class Utf8Stream {
 public:
  // The text this token completes (empty while a multi-byte sequence is still open).
  std::string push(uint32_t token);
  // The bytes of a sequence the stream ended inside, escaped.
  std::string finish();

 private:
  std::string pending_;  // the open sequence's bytes so far
  size_t length_ = 0;    // its full length, from the lead byte
};

}  // namespace rill_cli
