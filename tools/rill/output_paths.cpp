// Checks of a command's output files (output_paths.hpp).
#include "output_paths.hpp"

#include "rill/files.hpp"

namespace rill_cli {

rill::Status check_files(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (const NamedPath& out : outputs)
    if (!out.path.empty()) RILL_RETURN_IF_ERROR(rill::check_writable(out.path).with_context(out.option));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    auto clash = [&](const NamedPath& other) -> rill::Status {
      if (other.path.empty() || !rill::same_file(outputs[i].path, other.path)) return rill::Status::ok();
      return rill::invalid_argument(std::string(outputs[i].option) + " and " + other.option + " name the same file '" +
                                    outputs[i].path + "': writing one would destroy the other");
    };
    for (size_t j = i + 1; j < outputs.size(); ++j) RILL_RETURN_IF_ERROR(clash(outputs[j]));
    for (const NamedPath& in : inputs) RILL_RETURN_IF_ERROR(clash(in));
  }
  return rill::Status::ok();
}

}  // namespace rill_cli
