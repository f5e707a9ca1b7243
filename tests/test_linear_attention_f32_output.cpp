// Linear attention with f16 inputs and an f32 output: without decay an output row sums over every
// earlier position and passes f16's 65504 (a TransNormer's NormAttention layers in f16, before
// their norm). Every algorithm, causal and not, the quadratic form and the decoding step, against
// the reference on the same f16 values; the f16 output of the same inputs overflows.
#include <algorithm>
#include <cmath>

#include "linear_attention.hpp"
#include "linear_attention_test.hpp"
#include "rill/ops/linear_attention.hpp"

namespace {

using rill::DType;
using rill::ops::FeatureMap;
using Case = rill_test::LinearAttentionCase;

bool device_stores_f16() { return rill_test::float_dtypes(rill_test::make_context()).back() == DType::kF16; }

// Positive q, k and v of 4 to 8, exact in f16: each position adds about Dk * 36 * 6 to an output.
struct Inputs {
  std::vector<float> q, k, v, decay;
};
Inputs large_inputs(const Case& c, uint32_t seed) {
  auto make = [&](int64_t width, uint32_t s) {
    return rill_test::stored(rill_test::random_vector(size_t(c.batch * c.heads * c.n * width), s, 4.0f, 8.0f),
                             DType::kF16);
  };
  return {make(c.dk, seed), make(c.dk, seed + 1), make(c.dv, seed + 2), rill_test::la_decays(c, seed + 3)};
}

struct Run {
  std::vector<float> o, state;
};

// The forward of c on ctx with f16 q, k, v and an `out` o (f32 or f16).
Run forward(rill::Context& ctx, const Case& c, const Inputs& in, bool causal, DType out, bool naive = false) {
  auto q = rill_test::tensor_from(ctx, DType::kF16, {c.batch, c.heads, c.n, c.dk}, in.q, "q");
  auto k = rill_test::tensor_from(ctx, DType::kF16, {c.batch, c.heads, c.n, c.dk}, in.k, "k");
  auto v = rill_test::tensor_from(ctx, DType::kF16, {c.batch, c.heads, c.n, c.dv}, in.v, "v");
  auto o = rill_test::empty_tensor(ctx, out, {c.batch, c.heads, c.n, c.dv}, "o");
  auto state = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.dk, c.dv}, "state");
  rill::Tensor decay;
  if (c.decay) decay = rill_test::tensor_from(ctx, DType::kF32, {c.heads}, in.decay, "decay");
  const rill::ops::LinearAttentionOptions opt{.causal = causal,
                                              .feature_map = c.feature,
                                              .decay = c.decay ? &decay : nullptr,
                                              .chunk = c.chunk,
                                              .chunks_per_dispatch = c.per_dispatch};
  auto seq = ctx.sequence();
  if (naive) {
    REQUIRE(rill::ops::linear_attention_naive(*seq, q, k, v, o, opt).is_ok());
  } else {
    REQUIRE(rill::ops::linear_attention_forward(*seq, q, k, v, o, state, opt).is_ok());
  }
  REQUIRE(seq->run().is_ok());
  return {rill_test::read(ctx, o), naive ? std::vector<float>{} : rill_test::read(ctx, state)};
}

void check_against_reference(rill::Context& ctx, const Case& c, bool causal, uint32_t seed, bool naive = false) {
  const Inputs in = large_inputs(c, seed);
  std::vector<float> o_ref, s_ref;
  rill::ref::linear_attention_forward(in.q, in.k, in.v, in.decay, {c.batch, c.heads, c.n, c.dk, c.dv},
                                      rill::ref::FeatureMap(int(c.feature)), causal, {}, o_ref, s_ref);
  if (!c.decay) REQUIRE(rill_test::max_abs(o_ref) > 65504.0);  // passes f16's range (decay bounds the sum)
  const Run run = forward(ctx, c, in, causal, DType::kF32, naive);
  // f32 arithmetic on exact inputs: f32's tolerance, relative to the outputs' magnitude.
  rill_test::require_la_close(run.o, o_ref, DType::kF32, "f32 o");
  if (!naive) rill_test::require_la_close(run.state, s_ref, DType::kF32, "state");
}

}  // namespace

GPU_TEST_CASE("f16 linear attention writes an f32 output past f16's range with every algorithm",
              "[linear-attention][gpu]") {
  if (!device_stores_f16()) {
    WARN("the device stores no f16: no f16 inputs to take");
    return;
  }
  // Head widths of whole 4-element rows (the register scan's vec4 kernel) and not; decay or none;
  // windows of chunks carrying the state.
  const Case cases[] = {
      {1, 2, 150, 16, 16, FeatureMap::kIdentity, false, 64, 0},
      {2, 1, 131, 12, 20, FeatureMap::kElu1, true, 16, 3},
      {1, 3, 97, 9, 5, FeatureMap::kRelu, false, 7, 2},
  };
  for (const char* algorithm : rill_test::kLaAlgorithms) {
    auto made = rill_test::la_algorithm_context(algorithm);
    if (!made) continue;
    rill::Context& ctx = *made;
    uint32_t seed = 70;
    for (const Case& c : cases) {
      for (bool causal : {true, false}) {
        if (!causal && c.decay) continue;  // decay is causal only
        seed += 3;
        INFO(algorithm << ": " << c << " causal " << causal);
        check_against_reference(ctx, c, causal, seed);
      }
    }
  }
  // The quadratic form; 4,000 positions take lavapipe two dispatches (the second adds to the first's
  // outputs, read back in f32).
  auto ctx = rill_test::make_context();
  check_against_reference(ctx, cases[1], true, 91, true);
  check_against_reference(ctx, {1, 1, 4000, 16, 4, FeatureMap::kIdentity, false, 64, 0}, true, 92, true);
}

GPU_TEST_CASE("the same f16 inputs overflow an f16 output", "[linear-attention][gpu]") {
  if (!device_stores_f16()) {
    WARN("the device stores no f16: no f16 inputs to take");
    return;
  }
  auto ctx = rill_test::make_context();
  const Case c{1, 2, 150, 16, 16, FeatureMap::kIdentity, false, 64, 0};
  const Run run = forward(ctx, c, large_inputs(c, 5), true, DType::kF16);
  CHECK(std::any_of(run.o.begin(), run.o.end(), [](float x) { return !std::isfinite(x); }));
  const Run wide = forward(ctx, c, large_inputs(c, 5), true, DType::kF32);
  CHECK(std::all_of(wide.o.begin(), wide.o.end(), [](float x) { return std::isfinite(x); }));
}

GPU_TEST_CASE("decoding steps with f16 inputs write f32 outputs that continue the forward", "[linear-attention][gpu]") {
  if (!device_stores_f16()) {
    WARN("the device stores no f16: no f16 inputs to take");
    return;
  }
  auto ctx = rill_test::make_context();
  const Case c{1, 2, 40, 8, 12, FeatureMap::kElu1, false, 16, 0};
  const Inputs in = large_inputs(c, 17);
  std::vector<float> o_ref, s_ref;
  rill::ref::linear_attention_forward(in.q, in.k, in.v, {}, {c.batch, c.heads, c.n, c.dk, c.dv},
                                      rill::ref::FeatureMap::kElu1, true, {}, o_ref, s_ref);
  auto rows = [&](const std::vector<float>& x, int64_t d, int64_t t0, int64_t t1) {
    std::vector<float> out;
    for (int64_t h = 0; h < c.heads; ++h)
      out.insert(out.end(), x.begin() + (h * c.n + t0) * d, x.begin() + (h * c.n + t1) * d);
    return out;
  };
  const int64_t prefill = 30;
  auto q = rill_test::tensor_from(ctx, DType::kF16, {1, c.heads, prefill, c.dk}, rows(in.q, c.dk, 0, prefill));
  auto k = rill_test::tensor_from(ctx, DType::kF16, {1, c.heads, prefill, c.dk}, rows(in.k, c.dk, 0, prefill));
  auto v = rill_test::tensor_from(ctx, DType::kF16, {1, c.heads, prefill, c.dv}, rows(in.v, c.dv, 0, prefill));
  auto o = rill_test::empty_tensor(ctx, DType::kF32, {1, c.heads, prefill, c.dv});
  auto state = rill_test::empty_tensor(ctx, DType::kF32, {1, c.heads, c.dk, c.dv});
  const rill::ops::LinearAttentionOptions opt{.feature_map = c.feature, .chunk = c.chunk};
  auto seq = ctx.sequence();
  REQUIRE(rill::ops::linear_attention_forward(*seq, q, k, v, o, state, opt).is_ok());
  REQUIRE(seq->run().is_ok());
  auto sq = rill_test::empty_tensor(ctx, DType::kF16, {1, c.heads, 1, c.dk});
  auto sk = rill_test::empty_tensor(ctx, DType::kF16, {1, c.heads, 1, c.dk});
  auto sv = rill_test::empty_tensor(ctx, DType::kF16, {1, c.heads, 1, c.dv});
  auto so = rill_test::empty_tensor(ctx, DType::kF32, {1, c.heads, 1, c.dv});
  auto step = ctx.sequence();
  REQUIRE(rill::ops::linear_attention_step(*step, sq, sk, sv, so, state, opt).is_ok());
  for (int64_t t = prefill; t < c.n; ++t) {
    REQUIRE(ctx.upload_floats(sq, rows(in.q, c.dk, t, t + 1)).is_ok());
    REQUIRE(ctx.upload_floats(sk, rows(in.k, c.dk, t, t + 1)).is_ok());
    REQUIRE(ctx.upload_floats(sv, rows(in.v, c.dv, t, t + 1)).is_ok());
    REQUIRE(step->run().is_ok());
    INFO("position " << t);
    const auto want = rows(o_ref, c.dv, t, t + 1);
    REQUIRE(rill_test::max_abs(want) > 65504.0);
    rill_test::require_la_close(rill_test::read(ctx, so), want, DType::kF32, "decoded o");
  }
}

GPU_TEST_CASE("an f32 output is taken for f16 inputs only where it helps", "[linear-attention][gpu]") {
  if (!device_stores_f16()) {
    WARN("the device stores no f16: no f16 inputs to take");
    return;
  }
  auto ctx = rill_test::make_context();
  auto q16 = rill_test::empty_tensor(ctx, DType::kF16, {1, 2, 10, 4});
  auto v16 = rill_test::empty_tensor(ctx, DType::kF16, {1, 2, 10, 6});
  auto o32 = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 6});
  auto o32_short = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 9, 6});
  auto q32 = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 4});
  auto v32 = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 6});
  auto o16 = rill_test::empty_tensor(ctx, DType::kF16, {1, 2, 10, 6});
  auto state = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 4, 6});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  // An f16 output of f32 inputs would lose range, not gain it; a gradient stays in its input's type.
  CHECK(rill::ops::linear_attention_forward(*seq, q32, q32, v32, o16, state).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::linear_attention_forward(*seq, q16, q16, v16, o32_short, state).code() ==
        StatusCode::kInvalidArgument);
  CHECK(rill::ops::linear_attention_backward(*seq, q16, q16, v16, o32, q16, q16, v16, state).code() ==
        StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
  CHECK(rill::ops::linear_attention_forward(*seq, q16, q16, v16, o32, state).is_ok());
}
