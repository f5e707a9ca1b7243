// A check of the normalization tables a SentencePiece model file carries, before libsentencepiece
// reads them. The library (0.1.97) takes a model's precompiled character map, a double-array trie
// followed by the normalized strings, as it comes: a trie whose offsets point past its end is
// accepted, and the first text through it reads out of bounds (a crafted tokenizer.model crashed
// `rill generate`). A model file is untrusted input, so every trie offset a lookup can follow, and
// every string a match can name, is checked here against the table's size, and the matches one
// lookup can make against the library's fixed array of 32 (a deeper chain or a loop through a
// match overflowed its stack).
#pragma once

#include <cstdint>
#include <span>

#include "rill/status.hpp"

namespace rill::lm::detail {

// DataLoss naming what is wrong when a precompiled character map of the serialized ModelProto
// (its normalizer_spec or denormalizer_spec) could make a lookup leave the table or the library's
// array of matches; OK for a model without one and for every table libsentencepiece's trainer
// writes. Framing this reader cannot follow as protobuf would (a tag past 32 bits) is refused.
Status check_precompiled_charsmaps(std::span<const uint8_t> model_proto);

}  // namespace rill::lm::detail
