// Linear attention backward: every algorithm (register scans, serial chunked scans, parallel passes)
// against the reference gradients over odd shapes, feature maps, decay, chunk sizes and dispatch
// splits; the reference against finite differences.
#include <algorithm>
#include <iterator>
#include <span>

#include "linear_attention.hpp"
#include "linear_attention_test.hpp"
#include "rill/ops/linear_attention.hpp"

namespace {

using rill::DType;
using rill::ops::FeatureMap;

using Case = rill_test::LinearAttentionCase;

// Gradients: declared tolerance a little wider than the forward's (longer sums).
void require_grad_close(const std::vector<float>& got, const std::vector<float>& want, DType dtype, const char* what) {
  rill_test::require_la_close(got, want, dtype, what, 4e-6, 3e-5, 3e-3);
}

// The backward of `c` (causal or not) on random inputs from `seed` against the reference gradients.
void check_backward(rill::Context& ctx, const Case& c, DType dtype, uint32_t seed, bool causal) {
  const size_t nq = size_t(c.batch * c.heads * c.n * c.dk), nv = size_t(c.batch * c.heads * c.n * c.dv);
  const auto q = rill_test::stored(rill_test::random_vector(nq, seed), dtype);
  const auto k = rill_test::stored(rill_test::random_vector(nq, seed + 1), dtype);
  const auto v = rill_test::stored(rill_test::random_vector(nv, seed + 2), dtype);
  const auto d_o = rill_test::stored(rill_test::random_vector(nv, seed + 3), dtype);
  const auto decay = rill_test::la_decays(c, seed + 4);
  std::vector<float> dq_ref, dk_ref, dv_ref;
  rill::ref::linear_attention_backward(q, k, v, d_o, decay, {c.batch, c.heads, c.n, c.dk, c.dv},
                                       rill::ref::FeatureMap(int(c.feature)), causal, dq_ref, dk_ref, dv_ref);
  auto tq = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, q);
  auto tk = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, k);
  auto tv = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, v);
  auto tdo = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, d_o);
  auto tdq = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dk});
  auto tdk = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dk});
  auto tdv = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv});
  auto scratch = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.dk, c.dv});
  rill::Tensor tdecay;
  if (c.decay) tdecay = rill_test::tensor_from(ctx, DType::kF32, {c.heads}, decay);
  auto seq = ctx.sequence();
  const rill::Status st = rill::ops::linear_attention_backward(*seq, tq, tk, tv, tdo, tdq, tdk, tdv, scratch,
                                                               {.causal = causal,
                                                                .feature_map = c.feature,
                                                                .decay = c.decay ? &tdecay : nullptr,
                                                                .chunk = c.chunk,
                                                                .chunks_per_dispatch = c.per_dispatch});
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  REQUIRE(seq->run().is_ok());
  require_grad_close(rill_test::read(ctx, tdq), dq_ref, dtype, "dq");
  require_grad_close(rill_test::read(ctx, tdk), dk_ref, dtype, "dk");
  require_grad_close(rill_test::read(ctx, tdv), dv_ref, dtype, "dv");
}

// The causal backward under each of `algorithms`, forced, over odd shapes, feature maps, decay,
// chunk sizes and dispatch splits, f32 and f16.
void check_causal_algorithms(std::span<const char* const> algorithms) {
  for (const char* algorithm : algorithms) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=") + algorithm;
    auto ctx = rill_test::make_context(options);
    INFO(algorithm);
    const Case cases[] = {
        {1, 1, 1, 1, 1, FeatureMap::kIdentity, false, 64, 0}, {1, 1, 7, 16, 17, FeatureMap::kIdentity, true, 64, 0},
        {2, 3, 65, 8, 8, FeatureMap::kElu1, true, 16, 2},     {1, 2, 130, 33, 5, FeatureMap::kRelu, false, 16, 3},
        {1, 1, 100, 16, 64, FeatureMap::kElu1, true, 7, 4},   {1, 1, 64, 64, 64, FeatureMap::kIdentity, true, 64, 1},
        {1, 2, 150, 24, 40, FeatureMap::kRelu, true, 32, 0},  {1, 2, 77, 12, 9, FeatureMap::kSilu, true, 16, 0},
    };
    uint32_t seed = 300;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Case& c : cases) {
        seed += 10;
        INFO(c << " f16 " << (dtype == DType::kF16) << " seed " << seed);
        check_backward(ctx, c, dtype, seed, true);
      }
    }
  }
}

}  // namespace

static_assert(std::size(rill_test::kLaAlgorithms) == 5, "the two cases below split the algorithms by position");

// Every algorithm, forced, in two cases (one took a minute, and ran past CTest's ten minutes on a
// loaded machine): the register scan (CPU drivers), the serial chunked scan and the parallel passes
// a GPU runs; the parallel passes over spans with grouped columns, and with fused scores.
GPU_TEST_CASE("chunked linear attention backward matches the reference gradients", "[linear-attention][gpu][sweep]") {
  check_causal_algorithms(std::span(rill_test::kLaAlgorithms).first(3));
}

// The backward's three forms with tiles as deep as the chunk (test_linear_attention.cpp has the
// forward's): heads up to 64 on a 32 KiB device, Dk != Dv both ways, partial last chunks.
GPU_TEST_CASE("the linear attention backward with tiles as deep as the chunk matches the reference",
              "[linear-attention][gpu]") {
  const Case cases[] = {{1, 2, 130, 64, 64, FeatureMap::kElu1, true, 64, 0},
                        {1, 1, 100, 16, 40, FeatureMap::kIdentity, true, 64, 2},
                        {1, 2, 77, 33, 5, FeatureMap::kRelu, true, 16, 0}};
  for (const char* plan : {"la_chunk=32,la_tile=32,la_scores=fused", "la_chunk=16,la_tile=16"}) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=parallel,") + plan;
    auto ctx = rill_test::make_context(options);
    if (!rill_test::la_plan_fits_heads_of_64(ctx, plan)) continue;  // a phone-class limit profile
    uint32_t seed = 1400;
    for (const Case& c : cases) {
      seed += 10;
      INFO(plan << ": " << c);
      check_backward(ctx, c, DType::kF32, seed, true);
    }
  }
}

// The backward's three forms (two of them backward in time) with the output pass's row-block pairs
// over resident values (test_linear_attention.cpp has the forward's shapes and why).
GPU_TEST_CASE("the linear attention backward with row pairs over resident values matches the reference",
              "[linear-attention][gpu]") {
  const Case cases[] = {{1, 2, 130, 64, 64, FeatureMap::kElu1, true, 64, 0},
                        {1, 1, 100, 16, 40, FeatureMap::kIdentity, true, 64, 2},
                        {1, 2, 77, 33, 5, FeatureMap::kRelu, true, 16, 0},
                        {1, 1, 100, 8, 128, FeatureMap::kSilu, true, 40, 0}};
  for (const char* plan : {"la_rows=paired", "la_rows=paired,la_scores=fused,la_chunk=32"}) {
    auto options = rill_test::validated_options();
    options.kernel_plan = std::string("linear_attention=parallel,") + plan;
    auto ctx = rill_test::make_context(options);
    uint32_t seed = 1600;
    for (const Case& c : cases) {
      seed += 10;
      INFO(plan << ": " << c);
      check_backward(ctx, c, DType::kF32, seed, true);
    }
  }
}

GPU_TEST_CASE(
    "chunked linear attention backward over spans with grouped columns or with fused scores matches the reference",
    "[linear-attention][gpu][sweep]") {
  check_causal_algorithms(std::span(rill_test::kLaAlgorithms).subspan(3));
}

// Heads of 256 (LRPE's features over heads of 128): the register scans with one state column per
// lane, causal and not.
GPU_TEST_CASE("the register-scan backward takes heads of 256", "[linear-attention][gpu]") {
  auto options = rill_test::validated_options();
  options.kernel_plan = "linear_attention=scan";
  auto ctx = rill_test::make_context(options);
  check_backward(ctx, {1, 1, 40, 256, 24, FeatureMap::kElu1, true, 16, 0}, DType::kF32, 950, true);
  check_backward(ctx, {1, 1, 40, 24, 256, FeatureMap::kIdentity, false, 16, 0}, DType::kF32, 951, false);
}

TEST_CASE("the linear attention reference gradients equal central finite differences", "[linear-attention]") {
  const rill::ref::LinearAttentionShape s{1, 2, 6, 3, 4};
  using RefMap = rill::ref::FeatureMap;
  for (int form = 0; form < 8; ++form) {
    const RefMap f = RefMap(form % 4);
    const bool causal = form < 4;
    const auto q = rill_test::random_vector(size_t(2 * 6 * 3), 1), k = rill_test::random_vector(size_t(2 * 6 * 3), 2);
    const auto v = rill_test::random_vector(size_t(2 * 6 * 4), 3), w = rill_test::random_vector(size_t(2 * 6 * 4), 4);
    const std::vector<float> decay = {0.9f, 0.7f};
    auto loss = [&](const std::vector<float>& qq, const std::vector<float>& kk, const std::vector<float>& vv) {
      std::vector<float> o, state;
      rill::ref::linear_attention_forward(qq, kk, vv, decay, s, f, causal, {}, o, state);
      double l = 0.0;
      for (size_t i = 0; i < o.size(); ++i) l += double(w[i]) * o[i];
      return l;
    };
    std::vector<float> dq, dk, dv;
    rill::ref::linear_attention_backward(q, k, v, w, decay, s, f, causal, dq, dk, dv);
    const float h = 1e-3f;
    auto check = [&](const std::vector<float>& x, const std::vector<float>& grad, int which, const char* name) {
      for (size_t i = 0; i < x.size(); ++i) {
        auto up = x, down = x;
        up[i] += h;
        down[i] -= h;
        const double lu = which == 0 ? loss(up, k, v) : which == 1 ? loss(q, up, v) : loss(q, k, up);
        const double ld = which == 0 ? loss(down, k, v) : which == 1 ? loss(q, down, v) : loss(q, k, down);
        INFO(name << "[" << i << "] feature " << int(f) << " causal " << causal);
        CHECK(grad[i] == Approx((lu - ld) / (2.0 * h)).margin(2e-3).epsilon(2e-3));
      }
    };
    check(q, dq, 0, "dq");
    check(k, dk, 1, "dk");
    check(v, dv, 2, "dv");
  }
}

GPU_TEST_CASE("non-causal linear attention backward matches the reference gradients",
              "[linear-attention][gpu][sweep]") {
  // Every algorithm, forced: the register scans, the serial chunked scans and the parallel passes.
  for (const char* algorithm : rill_test::kLaAlgorithms) {
    auto made = rill_test::la_algorithm_context(algorithm);
    if (!made) continue;
    rill::Context& ctx = *made;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Case& c : {Case{1, 1, 1, 1, 1, FeatureMap::kIdentity, false, 64, 0},
                            Case{2, 2, 77, 9, 20, FeatureMap::kElu1, false, 16, 2},
                            Case{1, 1, 130, 33, 7, FeatureMap::kRelu, false, 64, 1},
                            Case{1, 2, 90, 24, 40, FeatureMap::kSilu, false, 7, 0}}) {
        INFO(algorithm << ": " << c << " f16 " << (dtype == DType::kF16));
        check_backward(ctx, c, dtype, 41, false);
      }
    }
  }
}
