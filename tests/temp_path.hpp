// Scratch file paths for tests. Every test process gets its own fresh directory (mkdtemp; on Windows a
// random name that create_directory makes),
// removed when the process exits, so a file left by an earlier run — or by another process
// that happened to get the same pid in a container — can never leak into a test.
#pragma once

#include <string>

namespace rill_test {

// A path named `name` inside this process's scratch directory; nothing is created at it.
std::string temp_path(const std::string& name);

// This process's scratch directory (created on first use).
const std::string& temp_dir();

}  // namespace rill_test
