// What the rill tool needs from the operating system beyond the engine: terminals, child processes
// and names unique to this process. POSIX and Windows implementations live in process.cpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rill/status.hpp"

namespace rill_cli {

// Whether standard error is a terminal (progress bars are drawn only there).
bool stderr_is_terminal();

// This process's id, for names of temporary files that concurrent runs must not share.
long process_id();

// A directory of this process's own under the system's temporary one, for files handed to a peer
// script: made afresh (never one that was there, nor a link another user left), readable by its
// owner only, and removed with everything in it when the object goes, on every path out.
class ScratchDir {
 public:
  static rill::Result<ScratchDir> create(const std::string& prefix);
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit ScratchDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// Runs a script with its arguments (each quoted for the shell here: paths may hold spaces) with the
// system's Python 3 and returns its standard output; its standard error is discarded. Nullopt when
// Python could not start or the script exited non-zero.
std::optional<std::string> python_output(const std::vector<std::string>& script_and_arguments);

// Sets or removes a variable of this process's environment (read by drivers when a device is made).
void set_environment(const char* name, const char* value);
void unset_environment(const char* name);

// Runs this executable again with `args` (without the program name) and `env_name`=`env_value`
// added to its environment; waits and returns its exit code.
rill::Result<int> run_self(const std::vector<std::string>& args, const std::string& env_name,
                           const std::string& env_value);

}  // namespace rill_cli
