// Linear attention: chunked causal forward against the reference over odd shapes, feature maps,
// decay, chunk sizes and dispatch splits; chunked == naive == recurrent; prefill + decode equals the
// full forward; continuing from a saved state; non-causal; bad input.
#include <algorithm>

#include "linear_attention.hpp"
#include "linear_attention_test.hpp"
#include "rill/ops/linear_attention.hpp"

namespace {

using rill::DType;
using rill::ops::FeatureMap;

using Case = rill_test::LinearAttentionCase;
using rill_test::require_la_close;

struct Inputs {
  std::vector<float> q, k, v, decay;
};

Inputs make_inputs(const Case& c, DType dtype, uint32_t seed) {
  Inputs in;
  in.q = rill_test::stored(rill_test::random_vector(size_t(c.batch * c.heads * c.n * c.dk), seed), dtype);
  in.k = rill_test::stored(rill_test::random_vector(size_t(c.batch * c.heads * c.n * c.dk), seed + 1), dtype);
  in.v = rill_test::stored(rill_test::random_vector(size_t(c.batch * c.heads * c.n * c.dv), seed + 2), dtype);
  in.decay = rill_test::la_decays(c, seed + 3);
  return in;
}

// The causal forward of `c` (and, with_naive, the quadratic form) against the reference: outputs
// and the final state.
void check_causal_forward(rill::Context& ctx, const Case& c, DType dtype, uint32_t seed, bool with_naive) {
  const Inputs in = make_inputs(c, dtype, seed);
  std::vector<float> o_ref, s_ref;
  rill::ref::linear_attention_forward(in.q, in.k, in.v, in.decay, {c.batch, c.heads, c.n, c.dk, c.dv},
                                      rill::ref::FeatureMap(int(c.feature)), true, {}, o_ref, s_ref);
  auto q = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, in.q, "q");
  auto k = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, in.k, "k");
  auto v = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, in.v, "v");
  auto o = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, "o");
  auto naive = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, "naive");
  auto state = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.dk, c.dv}, "state");
  rill::Tensor decay;
  if (c.decay) decay = rill_test::tensor_from(ctx, DType::kF32, {c.heads}, in.decay, "decay");
  const rill::ops::LinearAttentionOptions opt{.feature_map = c.feature,
                                              .decay = c.decay ? &decay : nullptr,
                                              .chunk = c.chunk,
                                              .chunks_per_dispatch = c.per_dispatch};
  auto seq = ctx.sequence();
  const rill::Status recorded = rill::ops::linear_attention_forward(*seq, q, k, v, o, state, opt);
  INFO(recorded.to_string());
  REQUIRE(recorded.is_ok());
  if (with_naive) REQUIRE(rill::ops::linear_attention_naive(*seq, q, k, v, naive, opt).is_ok());
  REQUIRE(seq->run().is_ok());
  require_la_close(rill_test::read(ctx, o), o_ref, dtype, "chunked o");
  if (with_naive) require_la_close(rill_test::read(ctx, naive), o_ref, dtype, "naive o");
  require_la_close(rill_test::read(ctx, state), s_ref, DType::kF32, "final state");
}

}  // namespace

GPU_TEST_CASE("chunked causal linear attention matches the reference", "[linear-attention][gpu][sweep]") {
  // Both families: the chunked kernel (gpu) and the register scan CPU drivers run (cpu).
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    const Case cases[] = {
        {1, 1, 1, 1, 1, FeatureMap::kIdentity, false, 64, 0},
        {1, 1, 7, 16, 17, FeatureMap::kIdentity, false, 64, 0},
        {2, 3, 65, 8, 8, FeatureMap::kIdentity, true, 64, 0},
        {1, 2, 130, 33, 5, FeatureMap::kElu1, false, 16, 3},
        {1, 1, 200, 16, 64, FeatureMap::kRelu, true, 7, 2},
        {2, 1, 64, 64, 64, FeatureMap::kElu1, true, 64, 1},
        {1, 4, 63, 5, 31, FeatureMap::kIdentity, true, 1, 17},
        {1, 1, 1000, 16, 8, FeatureMap::kElu1, true, 64, 0},
        {1, 2, 150, 16, 24, FeatureMap::kSilu, true, 16, 3},
        {1, 1, 65, 128, 128, FeatureMap::kIdentity, false, 64, 0},
    };
    uint32_t seed = 10;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Case& c : cases) {
        seed += 10;
        INFO(c << " f16 " << (dtype == DType::kF16) << " seed " << seed);
        check_causal_forward(ctx, c, dtype, seed, true);
      }
    }
  }
}

// Heads of 256 features (LRPE doubles a head of 128: the 385M TransNormerLLM's first layer): the
// register scan with one state column per lane on CPU drivers (kernel_plan_attention.cpp).
GPU_TEST_CASE("the register scan takes heads of 256", "[linear-attention][gpu]") {
  auto options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  options.kernel_plan = "linear_attention=scan";
  auto ctx = rill_test::make_context(options);
  const Case cases[] = {{1, 2, 70, 256, 128, FeatureMap::kIdentity, true, 64, 0},
                        {1, 1, 33, 256, 20, FeatureMap::kElu1, false, 16, 1}};
  uint32_t seed = 900;
  for (const Case& c : cases) {
    INFO("N " << c.n << " Dk " << c.dk << " Dv " << c.dv);
    check_causal_forward(ctx, c, DType::kF32, ++seed, false);
  }
}

GPU_TEST_CASE("every causal algorithm matches the reference when forced by the kernel plan",
              "[linear-attention][gpu][sweep]") {
  // The scan, the serial chunked kernel and the parallel chunked passes (also over spans of 4
  // chunks), each forced on this device (on lavapipe the parallel passes run as a GPU would run
  // them), with windows of chunks continuing the state from one another.
  const Case cases[] = {
      {1, 1, 1, 1, 1, FeatureMap::kIdentity, false, 64, 0},    {2, 3, 130, 33, 5, FeatureMap::kElu1, true, 16, 3},
      {1, 2, 201, 16, 64, FeatureMap::kRelu, true, 7, 5},      {1, 1, 90, 12, 8, FeatureMap::kSilu, true, 16, 2},
      {1, 1, 256, 64, 64, FeatureMap::kIdentity, true, 64, 1}, {1, 1, 97, 128, 40, FeatureMap::kIdentity, false, 32, 0},
      {1, 1, 129, 128, 128, FeatureMap::kElu1, true, 64, 0},  // the widest heads
  };
  for (const char* algorithm : rill_test::kLaAlgorithms) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=") + algorithm;
    rill::Context ctx = rill_test::make_context(options);
    uint32_t seed = 500;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Case& c : cases) {
        seed += 7;
        INFO(algorithm << ": " << c << " f16 " << (dtype == DType::kF16));
        check_causal_forward(ctx, c, dtype, seed, false);
      }
    }
  }
}

GPU_TEST_CASE("the parallel state scan matches the reference with its window cut into any number of runs",
              "[linear-attention][gpu][sweep]") {
  // la_par_scan.comp: 1 is the serial walk; 2 to 64 runs with decay, a short last chunk, runs
  // longer and shorter than the window's chunks, and windows of 20 chunks carrying the state.
  const Case cases[] = {
      {1, 1, 640, 16, 8, FeatureMap::kElu1, true, 8, 0},
      {1, 1, 700, 8, 12, FeatureMap::kIdentity, true, 8, 20},
      {2, 1, 333, 5, 7, FeatureMap::kRelu, false, 4, 0},
  };
  // Also over spans of 2 and 8 chunks (la_par_common.glsl: the scan walks spans).
  for (const char* groups : {"1", "2", "8", "64", "2,la_span=2", "8,la_span=8"}) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=parallel,la_scan_groups=") + groups;
    rill::Context ctx = rill_test::make_context(options);
    uint32_t seed = 900;
    for (const Case& c : cases) {
      seed += 3;
      INFO("runs " << groups << ": N " << c.n << " Dk " << c.dk << " Dv " << c.dv << " chunk " << c.chunk << " per "
                   << c.per_dispatch);
      check_causal_forward(ctx, c, DType::kF32, seed, false);
    }
  }
}

// Tiles as deep as the chunk (la_chunk=32,la_tile=32; 16 and 16): the output pass's causal walk
// over the chunk's values is one tile, so no barrier paces it (bench-h200/FINDINGS.md says why
// that matters), and its shared memory is sized by the head's widths. Heads up to 64 on a 32 KiB
// device; partial last chunks, decay, windows carrying the state, fused scores and not.
GPU_TEST_CASE("the parallel passes with tiles as deep as their chunks match the reference", "[linear-attention][gpu]") {
  const Case cases[] = {{1, 2, 130, 64, 64, FeatureMap::kElu1, true, 64, 0},
                        {2, 1, 200, 32, 32, FeatureMap::kIdentity, true, 64, 3},
                        {1, 3, 77, 33, 5, FeatureMap::kRelu, true, 16, 0}};
  for (const char* plan :
       {"la_chunk=32,la_tile=32", "la_chunk=32,la_tile=32,la_scores=fused", "la_chunk=16,la_tile=16,la_scores=fused"}) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=parallel,") + plan;
    rill::Context ctx = rill_test::make_context(options);
    INFO(plan);
    if (!rill_test::la_plan_fits_heads_of_64(ctx, plan)) continue;  // a phone-class limit profile
    uint32_t seed = 1300;
    for (const Case& c : cases) {
      seed += 5;
      INFO(plan << ": " << c);
      check_causal_forward(ctx, c, DType::kF32, seed, false);
    }
  }
}

// The output pass's blocks in row-block pairs (la_rows=paired: blocks i and last - i, walking the
// causal product over the chunk's h(C) resident in shared memory). The shapes cover an odd count of
// row blocks (a middle block without a partner: chunks ending 2, 8 and 20 positions in), Dk != Dv,
// two rounds of blocks per workgroup (Dv 128 over chunks of 40: 5 pairs x 64 column pairs), windows
// carrying the state, decay, and the scores fused or not, columns grouped or strided, deep tiles;
// f16 storage under the first plan (its loads are the only part f16 changes).
GPU_TEST_CASE("the parallel output pass with row pairs over resident values matches the reference",
              "[linear-attention][gpu]") {
  const Case cases[] = {{1, 2, 130, 64, 64, FeatureMap::kElu1, true, 64, 0},
                        {2, 1, 200, 32, 32, FeatureMap::kIdentity, true, 64, 3},
                        {1, 3, 77, 33, 5, FeatureMap::kRelu, true, 16, 0},
                        {1, 1, 100, 8, 128, FeatureMap::kSilu, true, 40, 0}};
  const char* plans[] = {"la_rows=paired", "la_rows=paired,la_scores=fused",
                         "la_rows=paired,la_columns=grouped,la_chunk=32", "la_rows=paired,la_chunk=16,la_tile=16"};
  for (const char* plan : plans) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=parallel,") + plan;
    rill::Context ctx = rill_test::make_context(options);
    INFO(plan);
    uint32_t seed = 1500;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      if (dtype == DType::kF16 && plan != plans[0]) continue;
      for (const Case& c : cases) {
        seed += 5;
        INFO(plan << ": " << c << " f16 " << (dtype == DType::kF16));
        check_causal_forward(ctx, c, dtype, seed, false);
      }
    }
  }
}

GPU_TEST_CASE("a bad kernel plan is refused when the context is created", "[linear-attention][gpu]") {
  for (const char* text : {"linear_attention=fast", "matmul=gpu", "linear_attention"}) {
    auto options = rill_test::validated_options();
    options.kernel_plan = text;
    auto ctx = rill::Context::create(options);
    INFO(text);
    REQUIRE_FALSE(ctx.is_ok());
    CHECK(ctx.status().code() == rill::StatusCode::kInvalidArgument);
    CHECK(ctx.status().message().find("kernel plan") != std::string::npos);
  }
}

GPU_TEST_CASE("prefill then decoding steps equal the full forward at every position", "[linear-attention][gpu]") {
  auto ctx = rill_test::make_context();
  const Case c{2, 2, 70, 16, 12, FeatureMap::kElu1, true, 16, 2};
  const int64_t prefill = 61, steps = c.n - prefill;
  const Inputs in = make_inputs(c, DType::kF32, 99);
  std::vector<float> o_ref, s_ref;
  rill::ref::linear_attention_forward(in.q, in.k, in.v, in.decay, {c.batch, c.heads, c.n, c.dk, c.dv},
                                      rill::ref::FeatureMap::kElu1, true, {}, o_ref, s_ref);
  // Slices of position range [t0, t1) per (batch, head).
  auto slice = [&](const std::vector<float>& x, int64_t d, int64_t t0, int64_t t1) {
    std::vector<float> out;
    for (int64_t bh = 0; bh < c.batch * c.heads; ++bh)
      out.insert(out.end(), x.begin() + (bh * c.n + t0) * d, x.begin() + (bh * c.n + t1) * d);
    return out;
  };
  auto decay = rill_test::tensor_from(ctx, DType::kF32, {c.heads}, in.decay);
  const rill::ops::LinearAttentionOptions opt{.feature_map = c.feature, .decay = &decay, .chunk = c.chunk};
  auto q = rill_test::tensor_from(ctx, DType::kF32, {c.batch, c.heads, prefill, c.dk}, slice(in.q, c.dk, 0, prefill));
  auto k = rill_test::tensor_from(ctx, DType::kF32, {c.batch, c.heads, prefill, c.dk}, slice(in.k, c.dk, 0, prefill));
  auto v = rill_test::tensor_from(ctx, DType::kF32, {c.batch, c.heads, prefill, c.dv}, slice(in.v, c.dv, 0, prefill));
  auto o = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, prefill, c.dv});
  auto state = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.dk, c.dv});
  auto seq = ctx.sequence();
  REQUIRE(rill::ops::linear_attention_forward(*seq, q, k, v, o, state, opt).is_ok());
  REQUIRE(seq->run().is_ok());
  require_la_close(rill_test::read(ctx, o), slice(o_ref, c.dv, 0, prefill), DType::kF32, "prefill");
  // Decode one position at a time with a recorded step, re-uploading its inputs each time.
  auto sq = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, 1, c.dk});
  auto sk = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, 1, c.dk});
  auto sv = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, 1, c.dv});
  auto so = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, 1, c.dv});
  auto step = ctx.sequence();
  REQUIRE(rill::ops::linear_attention_step(*step, sq, sk, sv, so, state, opt).is_ok());
  for (int64_t t = prefill; t < prefill + steps; ++t) {
    REQUIRE(ctx.upload_floats(sq, slice(in.q, c.dk, t, t + 1)).is_ok());
    REQUIRE(ctx.upload_floats(sk, slice(in.k, c.dk, t, t + 1)).is_ok());
    REQUIRE(ctx.upload_floats(sv, slice(in.v, c.dv, t, t + 1)).is_ok());
    REQUIRE(step->run().is_ok());
    INFO("position " << t);
    require_la_close(rill_test::read(ctx, so), slice(o_ref, c.dv, t, t + 1), DType::kF32, "decoded o");
  }
  require_la_close(rill_test::read(ctx, state), s_ref, DType::kF32, "state after decoding");
}

GPU_TEST_CASE("a forward continued from a saved state equals one over the whole sequence", "[linear-attention][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    const Case c{1, 2, 90, 8, 8, FeatureMap::kIdentity, true, 16, 0};
    const Inputs in = make_inputs(c, DType::kF32, 7);
    std::vector<float> o_ref, s_ref;
    rill::ref::linear_attention_forward(in.q, in.k, in.v, in.decay, {c.batch, c.heads, c.n, c.dk, c.dv},
                                        rill::ref::FeatureMap::kIdentity, true, {}, o_ref, s_ref);
    // Second half computed by the reference from the state the first half left.
    const int64_t half = 37;
    auto part = [&](const std::vector<float>& x, int64_t d, int64_t t0, int64_t t1) {
      std::vector<float> out;
      for (int64_t bh = 0; bh < c.heads; ++bh)
        out.insert(out.end(), x.begin() + (bh * c.n + t0) * d, x.begin() + (bh * c.n + t1) * d);
      return out;
    };
    auto decay = rill_test::tensor_from(ctx, DType::kF32, {c.heads}, in.decay);
    auto state = rill_test::empty_tensor(ctx, DType::kF32, {1, c.heads, c.dk, c.dv});
    auto seq = ctx.sequence();
    std::vector<rill::Tensor> keep;
    for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, half}, {half, c.n}}) {
      auto q = rill_test::tensor_from(ctx, DType::kF32, {1, c.heads, t1 - t0, c.dk}, part(in.q, c.dk, t0, t1));
      auto k = rill_test::tensor_from(ctx, DType::kF32, {1, c.heads, t1 - t0, c.dk}, part(in.k, c.dk, t0, t1));
      auto v = rill_test::tensor_from(ctx, DType::kF32, {1, c.heads, t1 - t0, c.dv}, part(in.v, c.dv, t0, t1));
      auto o = rill_test::empty_tensor(ctx, DType::kF32, {1, c.heads, t1 - t0, c.dv});
      REQUIRE(rill::ops::linear_attention_forward(*seq, q, k, v, o, state,
                                                  {.decay = &decay, .chunk = c.chunk, .continue_state = t0 > 0})
                  .is_ok());
      REQUIRE(seq->run().is_ok());
      seq = ctx.sequence();
      require_la_close(rill_test::read(ctx, o), part(o_ref, c.dv, t0, t1), DType::kF32, "o of the part");
    }
    require_la_close(rill_test::read(ctx, state), s_ref, DType::kF32, "final state");
  }
}

GPU_TEST_CASE("non-causal linear attention matches the reference", "[linear-attention][gpu][sweep]") {
  // Each algorithm's state and apply passes, forced: the register scan (CPU drivers), the serial
  // chunked kernel and the parallel passes a GPU runs.
  for (const char* algorithm : rill_test::kLaAlgorithms) {
    auto made = rill_test::la_algorithm_context(algorithm);
    if (!made) continue;
    rill::Context& ctx = *made;
    uint32_t seed = 3;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Case& c : {Case{1, 1, 1, 1, 1, FeatureMap::kIdentity, false, 64, 0},
                            Case{2, 2, 77, 9, 20, FeatureMap::kRelu, false, 16, 2},
                            Case{1, 3, 130, 33, 5, FeatureMap::kElu1, false, 7, 3},
                            Case{1, 1, 200, 64, 64, FeatureMap::kSilu, false, 64, 0}}) {
        seed += 5;
        INFO(algorithm << ": " << c << " f16 " << (dtype == DType::kF16));
        const Inputs in = make_inputs(c, dtype, seed);
        std::vector<float> o_ref, s_ref;
        rill::ref::linear_attention_forward(in.q, in.k, in.v, {}, {c.batch, c.heads, c.n, c.dk, c.dv},
                                            rill::ref::FeatureMap(int(c.feature)), false, {}, o_ref, s_ref);
        auto q = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, in.q);
        auto k = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, in.k);
        auto v = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, in.v);
        auto o = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv});
        auto state = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.dk, c.dv});
        auto seq = ctx.sequence();
        REQUIRE(
            rill::ops::linear_attention_forward(
                *seq, q, k, v, o, state,
                {.causal = false, .feature_map = c.feature, .chunk = c.chunk, .chunks_per_dispatch = c.per_dispatch})
                .is_ok());
        REQUIRE(seq->run().is_ok());
        require_la_close(rill_test::read(ctx, o), o_ref, dtype, "o");
        require_la_close(rill_test::read(ctx, state), s_ref, DType::kF32, "K^T V");
      }
    }
  }
}

GPU_TEST_CASE("linear attention rejects bad shapes and options", "[linear-attention][gpu]") {
  auto ctx = rill_test::make_context();
  auto q = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 4});
  auto v = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 6});
  auto v_short = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 9, 6});
  auto state = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 4, 6});
  auto state_wrong = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 6, 4});
  auto decay = rill_test::empty_tensor(ctx, DType::kF32, {3});
  auto flat = rill_test::empty_tensor(ctx, DType::kF32, {10, 4});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  namespace ops = rill::ops;
  CHECK(ops::linear_attention_forward(*seq, q, q, v_short, v_short, state).code() == StatusCode::kInvalidArgument);
  CHECK(ops::linear_attention_forward(*seq, q, q, v, v, state_wrong).code() == StatusCode::kInvalidArgument);
  CHECK(ops::linear_attention_forward(*seq, flat, flat, v, v, state).code() == StatusCode::kInvalidArgument);
  CHECK(ops::linear_attention_forward(*seq, q, q, v, v, state, {.decay = &decay}).code() ==
        StatusCode::kInvalidArgument);
  CHECK(ops::linear_attention_forward(*seq, q, q, v, v, state, {.chunk = 0}).code() == StatusCode::kInvalidArgument);
  CHECK(ops::linear_attention_forward(*seq, q, q, v, v, state, {.chunk = 65}).code() == StatusCode::kInvalidArgument);
  CHECK(ops::linear_attention_step(*seq, q, q, v, v, state).code() == StatusCode::kInvalidArgument);  // N = 10
  CHECK(seq->stats().dispatches == 0);
}
