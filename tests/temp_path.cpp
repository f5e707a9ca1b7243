#include "temp_path.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <vector>

namespace rill_test {
namespace {

// Paths are UTF-8, as rill takes them (a plain std::string is read in the ANSI code page on Windows).
std::filesystem::path path_of(const std::string& utf8) { return std::u8string(utf8.begin(), utf8.end()); }

#ifdef _WIN32
// Windows has no mkdtemp: a random name, made with create_directory, which refuses one that exists.
std::string make_scratch_dir() {
  const std::u8string base = std::filesystem::temp_directory_path().u8string();  // TMP, TEMP, ...
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char name[32];
    std::snprintf(name, sizeof name, "rill-test-%08x", static_cast<unsigned>(random()));
    const std::string path = std::string(base.begin(), base.end()) + "/" + name;
    std::error_code error;
    if (std::filesystem::create_directory(path_of(path), error)) return path;
  }
  throw std::runtime_error("cannot make a scratch directory in the temporary folder");
}
#else
std::string make_scratch_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/rill-test-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  return buf.data();
}
#endif

struct ScratchDir {
  std::string path = make_scratch_dir();
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_of(path), ignored);
  }
};

}  // namespace

const std::string& temp_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::string temp_path(const std::string& name) { return temp_dir() + "/" + name; }

}  // namespace rill_test
