// An environment variable set (or unset) for one scope, then restored to what it was: for tests of
// the RILL_* variables a context reads when it is created.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace rill_test {

class ScopedEnv {
 public:
  // A null value unsets the variable for the scope.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(name, value);
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ~ScopedEnv() { set(name_, old_ ? old_->c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  // The C runtime's environment, which std::getenv reads (on Windows an empty value unsets).
  static void set(const char* name, const char* value) {
#ifdef _WIN32
    _putenv_s(name, value != nullptr ? value : "");
#else
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
#endif
  }

  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace rill_test
