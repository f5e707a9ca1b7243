// hello_compute: the smallest complete rill program. Picks a device (a GPU if there is one,
// lavapipe otherwise), fills a tensor on the GPU, adds to it, and reads it back.
#include <array>
#include <cstdio>
#include <vector>

#include "rill/rill.hpp"

int main() {
  auto ctx = rill::Context::create();
  if (!ctx.is_ok()) {
    std::fprintf(stderr, "no device: %s\n", ctx.status().to_string().c_str());
    return 1;
  }
  std::printf("running on %s\n", ctx->device().name.c_str());

  const uint32_t n = 1000;
  auto x = ctx->tensor(rill::DType::kF32, {n}, "x");
  auto y = ctx->tensor(rill::DType::kF32, {n}, "y");
  if (!x.is_ok() || !y.is_ok()) {
    std::fprintf(stderr, "tensor: %s\n", (x.is_ok() ? y : x).status().to_string().c_str());
    return 1;
  }

  struct Fill { uint32_t n; float value; };
  struct Saxpy { uint32_t n; float a; };
  auto seq = ctx->sequence();
  if (!seq.is_ok()) {
    std::fprintf(stderr, "sequence: %s\n", seq.status().to_string().c_str());
    return 1;
  }
  // x = 2, y = 1, then y = 3 * x + y. rill places the barriers between the dependent dispatches.
  // Workgroups of 128 invocations, the most every Vulkan device allows (the kernels' default is 256).
  const std::vector<rill::SpecValue> wg = {rill::spec_uint("WG_SIZE", 128)};
  const std::array<uint32_t, 3> groups = {(n + 127) / 128, 1, 1};
  rill::Status s = seq->dispatch({.kernel = "util/fill",
                                  .bindings = {&*x},
                                  .push = rill::push_bytes(Fill{n, 2.0f}),
                                  .groups = groups,
                                  .spec = wg});
  if (s.is_ok())
    s = seq->dispatch({.kernel = "util/fill",
                       .bindings = {&*y},
                       .push = rill::push_bytes(Fill{n, 1.0f}),
                       .groups = groups,
                       .spec = wg});
  if (s.is_ok())
    s = seq->dispatch({.kernel = "util/saxpy",
                       .bindings = {&*x, &*y},
                       .push = rill::push_bytes(Saxpy{n, 3.0f}),
                       .groups = groups,
                       .spec = wg});
  if (s.is_ok()) s = seq->run();
  if (!s.is_ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  auto values = ctx->download_floats(*y);
  if (!values.is_ok()) {
    std::fprintf(stderr, "download: %s\n", values.status().to_string().c_str());
    return 1;
  }
  std::printf("y[0] = %.1f, y[%u] = %.1f (expected 7.0)\n", values.value()[0], n - 1, values.value()[n - 1]);
  return values.value()[0] == 7.0f && values.value()[n - 1] == 7.0f ? 0 : 1;
}
