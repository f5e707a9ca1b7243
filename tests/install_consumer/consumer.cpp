// Uses the installed C++ API.
#include <cstdio>
#include <rill/rill.hpp>

int main() {
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().to_string().c_str());
    return 1;
  }
  std::printf("consumer (C++, rill %s) on %s\n", RILL_VERSION_STRING, ctx->device().name.c_str());
  return 0;
}
