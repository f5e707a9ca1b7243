// Shared pieces of the linear attention tests: a test case's shape and options, and the declared
// tolerance (absolute part scaled by the outputs' magnitude, since outputs are sums over the sequence).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "op_test.hpp"
#include "rill/ops/linear_attention.hpp"

namespace rill_test {

struct LinearAttentionCase {
  int64_t batch, heads, n, dk, dv;
  rill::ops::FeatureMap feature;
  bool decay;
  uint32_t chunk, per_dispatch;
};

// A case in a failure's INFO: every field, so the failing shape can be rerun as it is.
inline std::ostream& operator<<(std::ostream& out, const LinearAttentionCase& c) {
  return out << "B " << c.batch << " H " << c.heads << " N " << c.n << " Dk " << c.dk << " Dv " << c.dv << " feature "
             << int(c.feature) << " decay " << c.decay << " chunk " << c.chunk << " per " << c.per_dispatch;
}

// Per-head decays of a case: random in [0.8, 1], and where there are several heads, head 1 forgets
// at once (decay 0: each output sees only its own position, so lambda^0 must be 1, which GLSL's
// pow(0, 0) does not promise).
inline std::vector<float> la_decays(const LinearAttentionCase& c, uint32_t seed) {
  if (!c.decay) return {};
  std::vector<float> decay = random_vector(size_t(c.heads), seed, 0.8f, 1.0f);
  if (c.heads > 1) decay[1] = 0.0f;
  return decay;
}

// The linear-attention algorithms a test forces through the kernel plan: the register scan (CPU
// drivers), the serial chunked kernel and the parallel passes a GPU runs (forced on a CPU driver,
// with the scores in their own walk): also over spans of 4 with the output pass's blocks over
// neighbouring columns in chunks of at most 32 positions, and with its scores fused into the state
// product's walk (GPUs' default).
inline constexpr const char* kLaAlgorithms[] = {
    "scan", "serial", "parallel", "parallel,la_span=4,la_columns=grouped,la_chunk=32", "parallel,la_scores=fused"};

// A context that runs `algorithm`; none (with a warning) for the GPU algorithms under emulation,
// where compiling their kernels takes minutes.
inline std::optional<rill::Context> la_algorithm_context(const char* algorithm) {
  if (emulated() && std::string_view(algorithm) != "scan") {
    WARN("the GPU algorithm " << algorithm << " left out under emulation (compile time)");
    return std::nullopt;
  }
  auto options = validated_options();
  options.kernel_plan = std::string("linear_attention=") + algorithm;
  return make_context(options);
}

// Whether `ctx`'s forced plan fits heads of 64 (a forward of 64 positions, recorded, not run): a
// refusal must name the forced tile; true where the plan fits. Tests of a plan that needs more
// shared memory than a limit profile gives skip their cases there, with a warning.
inline bool la_plan_fits_heads_of_64(rill::Context& ctx, const char* plan) {
  auto q = empty_tensor(ctx, rill::DType::kF32, {1, 1, 64, 64});
  auto o = empty_tensor(ctx, rill::DType::kF32, {1, 1, 64, 64});
  auto state = empty_tensor(ctx, rill::DType::kF32, {1, 1, 64, 64});
  auto seq = ctx.sequence();
  const rill::Status recorded = rill::ops::linear_attention_forward(*seq, q, q, q, o, state, {});
  if (recorded.is_ok()) return true;
  CHECK(recorded.code() == rill::StatusCode::kInvalidArgument);
  CHECK(recorded.message().find("tiles of") != std::string::npos);
  WARN("skipped the cases of " << plan << ": the device's " << ctx.device().caps.shared_memory_bytes
                               << " bytes of shared memory do not hold its tiles (refused by name)");
  return false;
}

inline void require_la_close(const std::vector<float>& got, const std::vector<float>& want, rill::DType dtype,
                             const char* what, double f32_atol = 2e-6, double f32_rtol = 2e-5, double f16_tol = 2e-3) {
  const bool f16 = dtype == rill::DType::kF16;
  require_close(got, want, (f16 ? f16_tol : f32_atol) * (1.0 + max_abs(want)), f16 ? f16_tol : f32_rtol, what);
}

}  // namespace rill_test
