// "Did you mean ...?" for the rill tool: unknown commands and options name the closest known one.
#include "suggest.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

namespace rill_cli {
namespace {

// Levenshtein distance (insertions, deletions and substitutions of one character).
size_t edit_distance(const std::string& a, const std::string& b) {
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

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

// The known name closest to `given`, if it is close enough to be a typo; empty otherwise.
std::string closest(const std::string& given, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, given.size() / 3) + 1;
  for (const std::string& k : known) {
    const size_t d = edit_distance(given, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best;
}

// An unknown command names itself and the closest known one, before CLI11's generic message.
bool known_command(CLI::App& app, const std::string& name, const char* context) {
  const std::vector<std::string> names = command_names(app);
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  const std::string guess = closest(name, names);
  std::fprintf(stderr, "rill%s: unknown command '%s'%s (commands: %s)\n", context, name.c_str(),
               guess.empty() ? "" : ("; did you mean '" + guess + "'?").c_str(), joined(names).c_str());
  return false;
}

// CLI11 names an unexpected argument; add the closest option of the command it was given to.
void suggest_options(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> options;
  for (CLI::App* sub : app.get_subcommands())
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& n : o->get_lnames()) options.push_back("--" + n);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(options.begin(), options.end(), name) != options.end()) continue;
    const std::string guess = closest(name, options);
    if (!guess.empty()) std::fprintf(stderr, "unknown option '%s'; did you mean '%s'?\n", name.c_str(), guess.c_str());
  }
}

}  // namespace rill_cli
