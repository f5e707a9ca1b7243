#include "gpu_test.hpp"

#include <mutex>
#include <unistd.h>

namespace rill_test {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_messages;

}  // namespace

std::vector<std::string> validation_messages() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_messages;
}

void clear_validation_messages() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_messages.clear();
}

rill::ContextOptions validated_options() {
  rill::ContextOptions o;
  o.validation = true;
  o.synchronization_validation = true;
  o.on_validation_message = [](rill::MessageSeverity, std::string_view text) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_messages.emplace_back(text);
  };
  return o;
}

rill::Context make_context(rill::ContextOptions options) {
  auto ctx = rill::Context::create(options);
  INFO(ctx.status().to_string());
  REQUIRE(ctx.is_ok());
  return std::move(ctx).value();
}

rill::Dispatch fill_dispatch(const rill::Tensor& out, uint32_t n, float value) {
  return {.kernel = "util/fill", .bindings = {&out}, .push = rill::push_bytes(Fill{n, value}),
          .groups = {(n + 255) / 256, 1, 1}};
}

rill::Dispatch saxpy_dispatch(const rill::Tensor& x, const rill::Tensor& y, uint32_t n, float a,
                              std::string_view variant) {
  // Enough groups for either variant (default: 256 per group; cpu: 64 x 16 per group).
  return {.kernel = "util/saxpy", .bindings = {&x, &y}, .push = rill::push_bytes(Saxpy{n, a}),
          .groups = {(n + 255) / 256, 1, 1}, .variant = variant};
}

std::string temp_path(const std::string& name) {
  return "/tmp/rill-test-" + std::to_string(::getpid()) + "-" + name;
}

}  // namespace rill_test
