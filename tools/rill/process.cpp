// The rill tool's operating-system needs (process.hpp): POSIX (fork, exec of /proc/self/exe, popen)
// and Windows (_spawnv of the module's own path, _popen).
#include "process.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#ifndef NOMINMAX  // MinGW's libstdc++ may define it already
#define NOMINMAX
#endif
#include <io.h>
#include <process.h>
#include <windows.h>
#else
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace rill_cli {
namespace {

#ifdef _WIN32
constexpr const char* kPythonCommand = "python ";
constexpr const char* kDiscardStderr = " 2>NUL";
FILE* open_pipe(const char* command) { return _popen(command, "r"); }
int close_pipe(FILE* pipe) { return _pclose(pipe); }
// As the C runtime splits a command line: backslashes double only before a quote (the closing
// one included), a quote is escaped.
std::string shell_quoted(const std::string& word) {
  std::string out = "\"";
  size_t backslashes = 0;
  for (char c : word) {
    if (c == '\\') {
      ++backslashes;
      continue;
    }
    out.append(c == '"' ? 2 * backslashes + 1 : backslashes, '\\');
    backslashes = 0;
    out += c;
  }
  out.append(2 * backslashes, '\\');
  return out + "\"";
}
// cmd /c drops the first and the last quote of a line that starts with one: one pair more.
std::string whole_command(const std::string& command) { return "\"" + command + "\""; }
#else
constexpr const char* kPythonCommand = "/usr/bin/python3 ";  // the system's, where python3-torch is
constexpr const char* kDiscardStderr = " 2>/dev/null";
FILE* open_pipe(const char* command) { return popen(command, "r"); }
int close_pipe(FILE* pipe) { return pclose(pipe); }
std::string shell_quoted(const std::string& word) {  // '...', each ' as '\''
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
std::string whole_command(const std::string& command) { return command; }
#endif

}  // namespace

rill::Result<ScratchDir> ScratchDir::create(const std::string& prefix) {
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) return rill::unavailable("no temporary directory: " + ec.message());
  std::random_device entropy;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::filesystem::path path =
        base / (prefix + "-" + std::to_string(process_id()) + "-" + std::to_string(entropy() & 0xffffff));
    // create_directory makes it or reports that something (a directory, a link to one) is there.
    if (std::filesystem::create_directory(path, ec)) {
      std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
      return ScratchDir(path);
    }
    if (ec) return rill::unavailable("cannot make a directory in " + base.string() + ": " + ec.message());
  }
  return rill::unavailable("cannot make a directory of this process's own in " + base.string());
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

#ifdef _WIN32
bool stderr_is_terminal() { return _isatty(_fileno(stderr)) != 0; }
long process_id() { return long(_getpid()); }
#else
bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }
long process_id() { return long(getpid()); }
#endif

std::optional<std::string> python_output(const std::vector<std::string>& script_and_arguments) {
  // RILL_PYTHON names another interpreter (a GPU machine's PyTorch often lives in a virtualenv).
  const char* chosen = std::getenv("RILL_PYTHON");
  std::string command = chosen != nullptr && *chosen != '\0' ? std::string(chosen) + " " : kPythonCommand;
  for (const std::string& word : script_and_arguments) command += shell_quoted(word) + " ";
  command += kDiscardStderr;
  FILE* pipe = open_pipe(whole_command(command).c_str());
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (const size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  if (close_pipe(pipe) != 0) return std::nullopt;
  return out;
}

void set_environment(const char* name, const char* value) {
#ifdef _WIN32
  _putenv_s(name, value);
#else
  setenv(name, value, 1);
#endif
}

void unset_environment(const char* name) {
#ifdef _WIN32
  _putenv_s(name, "");  // an empty value removes it there
#else
  unsetenv(name);
#endif
}

rill::Result<int> run_self(const std::vector<std::string>& args, const std::string& env_name,
                           const std::string& env_value) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef _WIN32
  char self[MAX_PATH];
  const DWORD n = GetModuleFileNameA(nullptr, self, MAX_PATH);
  if (n == 0 || n == MAX_PATH) return rill::unavailable("cannot find this program's own path");
  if (_putenv_s(env_name.c_str(), env_value.c_str()) != 0)
    return rill::unavailable("cannot set " + env_name + " for the child process");
  // _spawnv joins the arguments into one command line: quote each.
  std::vector<std::string> quoted = {"\"" + std::string(self) + "\""};
  for (const std::string& a : args) quoted.push_back("\"" + a + "\"");
  std::vector<const char*> argv;
  for (const std::string& q : quoted) argv.push_back(q.c_str());
  argv.push_back(nullptr);
  const intptr_t code = _spawnv(_P_WAIT, self, argv.data());
  if (code == -1) return rill::unavailable("cannot start " + std::string(self));
  return int(code);
#else
  const pid_t child = fork();
  if (child < 0) return rill::unavailable("cannot start a child process (fork failed)");
  if (child == 0) {
    setenv(env_name.c_str(), env_value.c_str(), 1);
    std::vector<std::string> owned = {"rill"};
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : owned) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    std::perror("rill: exec of /proc/self/exe");
    _exit(127);
  }
  // Ctrl-C reaches the child (the same process group), which stops as it does alone; this process
  // waits for it and goes on to its own end (the profile of what ran), so it ignores the key meanwhile.
  struct sigaction ignore {
  }, before{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &before);
  int status = 0;
  bool waited = true;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) {
      waited = false;
      break;
    }
  sigaction(SIGINT, &before, nullptr);
  if (!waited) return rill::unavailable("waiting for the child process failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
#endif
}

}  // namespace rill_cli
