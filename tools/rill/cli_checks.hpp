// Validators for the rill tool's numeric options, so a bad value is refused by name before any work
// or output (CLI11 on its own takes "-1" for an unsigned seed as 2^64 - 1, and NaN for a float).
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

namespace rill_cli {

// A decimal integer from 0 to `most` (2^64 - 1 unless the option's type is narrower), digits only
// (no sign, exponent or fraction): CLI11 alone reads "-1" into a uint64_t as 2^64 - 1.
inline CLI::Validator whole_number(const char* type_name, uint64_t most = UINT64_MAX) {
  return CLI::Validator(
      [most](std::string& s) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || ec != std::errc() ||
            end != s.data() + s.size() || v > most)
          return "must be a whole number from 0 to " + std::to_string(most) + ", got '" + s + "'";
        return {};
      },
      type_name);
}
inline const CLI::Validator kSeed = whole_number("SEED");
inline const CLI::Validator kCount = whole_number("COUNT");
inline const CLI::Validator kCount32 = whole_number("COUNT", UINT32_MAX);  // for a uint32_t option

// A number that parses whole, is finite and satisfies `ok`; else the message names what it must be.
// The options are f32: a value past f32's range (1e39) or below its smallest (1e-50, not 0) is
// refused as such, not reported later as infinite or zero.
template <typename Ok>
CLI::Validator number_check(const char* must_be, const char* type_name, Ok ok) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || !ok(v))
          return std::string("must be ") + must_be + ", got '" + s + "'";
        if (const float f = float(v); !std::isfinite(f) || (v != 0 && f == 0))
          return std::string("must be ") + must_be + " within f32's range (1.2e-38 to 3.4e38), got '" + s + "'";
        return {};
      },
      type_name);
}

inline const CLI::Validator kFiniteNonNegative =
    number_check("a finite number >= 0", "FLOAT>=0", [](double v) { return v >= 0; });
inline const CLI::Validator kFinitePositive =
    number_check("a finite number > 0", "FLOAT>0", [](double v) { return v > 0; });
inline const CLI::Validator kFinite = number_check("a finite number", "FLOAT", [](double) { return true; });
inline const CLI::Validator kProbability =
    number_check("a number in (0, 1]", "FLOAT in (0,1]", [](double v) { return v > 0 && v <= 1; });
// A prefill segment: at most 65535 positions (the engine's limit; 0 asks for the model's default).
inline const CLI::Validator kSegment = CLI::Range(0u, 65535u);

// Fills `given` with the names of the options the command line gave `command` ("--lm-config"), once
// it is parsed: a command refuses an option of work it will not do rather than ignore it.
inline void record_given_options(CLI::App* command, std::set<std::string>& given) {
  command->parse_complete_callback([command, &given] {
    for (const CLI::Option* option : command->get_options())
      if (option->count() > 0) given.insert(option->get_name());
  });
}

}  // namespace rill_cli
