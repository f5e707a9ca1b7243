// "Did you mean ...?" for the rill tool: the closest known name by edit distance.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace rill_cli {

// The known name closest to `given`, if it is close enough to be a typo; empty otherwise.
std::string closest(const std::string& given, const std::vector<std::string>& known);

// Whether `name` is a subcommand of `app`; if not, prints which is closest (`context` names the
// command it was given to, e.g. " profile").
bool known_command(CLI::App& app, const std::string& name, const char* context);

// After CLI11 refused an argument: prints the closest option of any subcommand to each unknown one.
void suggest_options(CLI::App& app, int argc, char** argv);

}  // namespace rill_cli
