// The precompiled character maps' check (see sentencepiece_charsmap.hpp). A map is
// <trie bytes, u32 LE><double-array trie of u32 units><normalized strings, each NUL-terminated>;
// a lookup (darts-clone's commonPrefixSearch) starts at unit 0 and, from a unit u at index i, reads
// the units at (i ^ offset(u)) ^ c for the text's next byte c, going on where the label matches and
// taking the leaf's value as an index into the normalized strings.
#include "lm/sentencepiece_charsmap.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "lm/protobuf_wire.hpp"

namespace rill::lm::detail {
namespace {

// The double array's unit layout (darts-clone, as libsentencepiece embeds it).
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t value_of(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label_of(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t offset_of(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// libsentencepiece's Normalizer keeps one lookup's matches in an array of this many (0.1.97:
// kMaxTrieResultsSize) and reads as many as the trie reports.
constexpr uint32_t kMaxCharsmapMatches = 32;

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

  // Every unit a lookup can reach from the root, each once, with the most matches a lookup makes
  // below it. The library keeps one lookup's matches in an array of kMaxCharsmapMatches and reads
  // as many as the trie yields: a path of more matches, or a loop through a match, overflows it.
  // Loops without matches are harmless (a lookup ends with its text) and occur where a byte 0
  // leads to an empty unit, so units are grouped into strongly connected components (Tarjan's
  // algorithm, iterative) and each loop-free component's exits give all its units' count.
  constexpr uint32_t kUnvisited = UINT32_MAX;
  std::vector<uint32_t> order(units, kUnvisited), low(units, 0), most(units, 0);
  std::vector<uint8_t> on_stack(units, 0), self_edge(units, 0);
  std::vector<size_t> component;  // Tarjan's stack
  struct Visit {
    size_t unit;
    uint32_t next_byte;
  };
  std::vector<Visit> path;
  uint32_t visited = 0;
  auto enter = [&](size_t u) {
    order[u] = low[u] = visited++;
    component.push_back(u);
    on_stack[u] = 1;
    path.push_back({u, 0});
  };
  auto leaf_count = [&](size_t u) { return has_leaf(unit[u]) ? 1u : 0u; };
  enter(0);
  while (!path.empty()) {
    const size_t top = path.size() - 1;  // an index: a push may move the vector
    const size_t u = path[top].unit;
    const size_t base = u ^ offset_of(unit[u]);
    if ((base | 0xFF) >= units)
      return broken(spec, "has a trie node whose children lie past its " + std::to_string(units) + " units");
    bool descended = false;
    while (path[top].next_byte < 256 && !descended) {
      const uint32_t c = path[top].next_byte++;
      const size_t child = base ^ c;
      const uint32_t cu = unit[child];
      if (label_of(cu) != c) continue;  // the lookup stops here for this byte
      if (has_leaf(cu)) {
        const size_t leaf = child ^ offset_of(cu);
        if (leaf >= units) return broken(spec, "has a match whose value lies past the trie");
        const uint32_t at = value_of(unit[leaf]);
        if (at >= strings_end)
          return broken(spec, "names a normalized string at " + std::to_string(at) + " that is not within its " +
                                  std::to_string(normalized.size()) + " bytes");
      }
      if (order[child] == kUnvisited) {
        enter(child);
        descended = true;
      } else if (on_stack[child]) {  // a loop: settled when its component closes
        low[u] = std::min(low[u], order[child]);
        if (child == u) self_edge[u] = 1;
      } else {
        most[u] = std::max(most[u], most[child] + leaf_count(child));
      }
    }
    if (descended) continue;
    path.pop_back();
    if (low[u] == order[u]) {  // u closes a component: it and the units above it on the stack
      const auto first = std::find(component.rbegin(), component.rend(), u).base() - 1;
      const bool loops = component.end() - first > 1 || self_edge[u];
      uint32_t exits = 0;
      for (auto m = first; m != component.end(); ++m) {
        if (loops && has_leaf(unit[*m]))
          return data_loss(std::string("the model's ") + spec +
                           " character map loops back through a match (a lookup could match without end)");
        exits = std::max(exits, most[*m]);
      }
      for (auto m = first; m != component.end(); ++m) {
        most[*m] = exits;
        on_stack[*m] = 0;
      }
      component.erase(first, component.end());
    }
    if (!path.empty()) {
      const size_t parent = path.back().unit;
      if (on_stack[u])
        low[parent] = std::min(low[parent], low[u]);
      else
        most[parent] = std::max(most[parent], most[u] + leaf_count(u));
    }
  }
  if (most[0] > kMaxCharsmapMatches)
    return data_loss(std::string("the model's ") + spec + " character map nests " + std::to_string(most[0]) +
                     " matches in one lookup, more than the " + std::to_string(kMaxCharsmapMatches) +
                     " libsentencepiece holds");
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
