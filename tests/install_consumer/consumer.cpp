// Uses the installed C++ API.
#include <cstdio>
#include <rill/rill.hpp>
#include <string>

int main() {
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().to_string().c_str());
    return 1;
  }
  // A status made here records this file as its origin (the header's SourceLocation, at the call).
  const rill::Status made_here = rill::invalid_argument("made by the consumer");
  if (made_here.location().find("consumer.cpp:") == std::string::npos) {
    std::fprintf(stderr, "a status made in consumer.cpp says it came from '%s'\n", made_here.location().c_str());
    return 1;
  }
  std::printf("consumer (C++, rill %s) on %s\n", RILL_VERSION_STRING, ctx->device().name.c_str());
  return 0;
}
