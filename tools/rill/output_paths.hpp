// The files a `rill` command writes, checked before it starts: each can be written, and none is
// another of the command's files (writing it would destroy that one).
#pragma once

#include <string>
#include <vector>

#include "rill/status.hpp"

namespace rill_cli {

// A file by the option that names it; an empty path is an option not given.
struct NamedPath {
  const char* option;
  std::string path;
};

// OK when every output can be written (rill::check_writable) and no two of the given files
// (outputs, and the inputs they must not overwrite) are one file: the same path after links and
// "..", or the same file through a hard link. The error names both options.
rill::Status check_files(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

}  // namespace rill_cli
