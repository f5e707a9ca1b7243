// Checks of a command's output files (output_paths.hpp).
#include "output_paths.hpp"

#include <filesystem>
#include <system_error>

#include "rill/files.hpp"

namespace rill_cli {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec_a, ec_b, ec;
  // weakly_canonical keeps a relative path relative where nothing of it exists ("x" stays "x",
  // "./x" becomes absolute): absolute first.
  const fs::path ca = fs::weakly_canonical(fs::absolute(fs::u8path(a)), ec_a).lexically_normal(),
                 cb = fs::weakly_canonical(fs::absolute(fs::u8path(b)), ec_b).lexically_normal();
  if (!ec_a && !ec_b && ca == cb) return true;
  return fs::exists(fs::u8path(a), ec) && fs::exists(fs::u8path(b), ec) &&
         fs::equivalent(fs::u8path(a), fs::u8path(b), ec) && !ec;
}

rill::Status check_files(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (const NamedPath& out : outputs)
    if (!out.path.empty()) RILL_RETURN_IF_ERROR(rill::check_writable(out.path).with_context(out.option));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    auto clash = [&](const NamedPath& other) -> rill::Status {
      if (other.path.empty() || !same_file(outputs[i].path, other.path)) return rill::Status::ok();
      return rill::invalid_argument(std::string(outputs[i].option) + " and " + other.option + " name the same file '" +
                                    outputs[i].path + "': writing one would destroy the other");
    };
    for (size_t j = i + 1; j < outputs.size(); ++j) RILL_RETURN_IF_ERROR(clash(outputs[j]));
    for (const NamedPath& in : inputs) RILL_RETURN_IF_ERROR(clash(in));
  }
  return rill::Status::ok();
}

}  // namespace rill_cli
