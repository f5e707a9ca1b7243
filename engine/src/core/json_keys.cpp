// first_duplicate_key: one SAX pass, a key set per open object (O(n log n) in the key count);
// nests_deeper_than: one pass counting brackets.
#include "core/json_keys.hpp"

#include <nlohmann/json.hpp>
#include <unordered_set>
#include <vector>

namespace rill {
namespace {

using Json = nlohmann::json;

class DuplicateKeyFinder final : public nlohmann::json_sax<Json> {
 public:
  std::optional<std::string> duplicate;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!open_.back().insert(k).second) {
      duplicate = k;
      return false;  // stop at the first one
    }
    return true;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  std::vector<std::unordered_set<std::string>> open_;
};

}  // namespace

std::optional<std::string> first_duplicate_key(std::string_view text) {
  DuplicateKeyFinder finder;
  Json::sax_parse(text.begin(), text.end(), &finder, nlohmann::detail::input_format_t::json, /*strict=*/true);
  return finder.duplicate;
}

bool nests_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // skip the escaped character
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace rill
