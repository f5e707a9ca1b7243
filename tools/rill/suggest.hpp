// "Did you mean ...?" for the rill tool: the closest known name by edit distance.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace rill_cli {

// Levenshtein distance (insertions, deletions and substitutions of one character).
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known name closest to `given`, if it is close enough to be a typo; empty otherwise.
inline std::string closest(const std::string& given, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, given.size() / 3) + 1;
  for (const std::string& k : known) {
    const size_t d = edit_distance(given, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best;
}

}  // namespace rill_cli
