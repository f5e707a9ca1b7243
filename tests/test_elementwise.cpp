// Elementwise ops against the references: add, mul, SiLU, GLU (forward and backward, backward
// also against finite differences), embedding gather and its backward, softmax and cross-entropy;
// the language model's head merge, which shares their texel form.
#include <array>
#include <cmath>
#include <cstring>
#include <tuple>

#include "elementwise.hpp"
#include "lm/lm_kernels.hpp"
#include "op_test.hpp"
#include "rill/half.hpp"
#include "rill/ops/elementwise.hpp"

namespace {

using rill::DType;
namespace ops = rill::ops;

double atol(DType d) { return d == DType::kF16 ? 2e-3 : 1e-6; }
double rtol(DType d) { return d == DType::kF16 ? 2e-3 : 1e-5; }

rill::Tensor u32_tensor(rill::Context& ctx, const std::vector<uint32_t>& values) {
  auto t = rill_test::empty_tensor(ctx, DType::kU32, {int64_t(values.size())});
  REQUIRE(ctx.upload(t, {reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4}).is_ok());
  return t;
}

uint32_t read_u32(rill::Context& ctx, const rill::Tensor& t) {
  uint32_t v = 0;
  REQUIRE(ctx.download(t, {reinterpret_cast<uint8_t*>(&v), 4}).is_ok());
  return v;
}

}  // namespace

namespace {

// add, mul, SiLU and GLU on ctx over odd sizes and sizes of whole 4-element texels.
void check_elementwise(rill::Context& ctx) {
  uint32_t seed = 1;
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    for (int64_t n : {1, 7, 12, 257, 1000}) {
      INFO("n " << n << " f16 " << (dtype == DType::kF16));
      const auto a = rill_test::stored(rill_test::random_vector(size_t(n), ++seed, -4.0f, 4.0f), dtype);
      const auto b = rill_test::stored(rill_test::random_vector(size_t(n), ++seed, -4.0f, 4.0f), dtype);
      const auto dy = rill_test::stored(rill_test::random_vector(size_t(n), ++seed), dtype);
      auto ta = rill_test::tensor_from(ctx, dtype, {n}, a), tb = rill_test::tensor_from(ctx, dtype, {n}, b);
      auto tdy = rill_test::tensor_from(ctx, dtype, {n}, dy);
      std::vector<rill::Tensor> outs;
      for (int i = 0; i < 12; ++i) outs.push_back(rill_test::empty_tensor(ctx, dtype, {n}));
      auto seq = ctx.sequence();
      REQUIRE(ops::add(*seq, ta, tb, outs[0]).is_ok());
      REQUIRE(ops::mul(*seq, ta, tb, outs[1]).is_ok());
      REQUIRE(ops::silu_forward(*seq, ta, outs[2]).is_ok());
      REQUIRE(ops::silu_backward(*seq, ta, tdy, outs[3]).is_ok());
      REQUIRE(ops::glu_forward(*seq, ta, tb, outs[4], ops::GluActivation::kSilu).is_ok());
      REQUIRE(ops::glu_backward(*seq, ta, tb, tdy, outs[5], outs[6], ops::GluActivation::kSigmoid).is_ok());
      REQUIRE(ops::glu_forward(*seq, ta, tb, outs[7], ops::GluActivation::kIdentity).is_ok());
      REQUIRE(ops::glu_backward(*seq, ta, tb, tdy, outs[8], outs[9], ops::GluActivation::kIdentity).is_ok());
      REQUIRE(ops::glu_backward(*seq, ta, tb, tdy, outs[10], outs[11], ops::GluActivation::kSilu).is_ok());
      REQUIRE(seq->run().is_ok());
      std::vector<float> sum(a.size()), prod(a.size()), silu(a.size()), dsilu(a.size()), glu, da, db, glu_id;
      for (size_t i = 0; i < a.size(); ++i) {
        sum[i] = a[i] + b[i];
        prod[i] = a[i] * b[i];
        silu[i] = float(rill::ref::activation(2, a[i]));
        dsilu[i] = float(dy[i] * rill::ref::activation_grad(2, a[i]));
      }
      rill::ref::glu_forward(a, b, 2, glu);
      rill::ref::glu_backward(a, b, dy, 1, da, db);
      rill::ref::glu_forward(a, b, 0, glu_id);
      rill_test::require_close(rill_test::read(ctx, outs[0]), sum, atol(dtype), rtol(dtype), "add");
      rill_test::require_close(rill_test::read(ctx, outs[1]), prod, atol(dtype), rtol(dtype), "mul");
      rill_test::require_close(rill_test::read(ctx, outs[2]), silu, atol(dtype), rtol(dtype), "silu");
      rill_test::require_close(rill_test::read(ctx, outs[3]), dsilu, atol(dtype), rtol(dtype), "silu backward");
      rill_test::require_close(rill_test::read(ctx, outs[4]), glu, atol(dtype), rtol(dtype), "glu");
      rill_test::require_close(rill_test::read(ctx, outs[5]), da, atol(dtype), rtol(dtype), "glu da");
      rill_test::require_close(rill_test::read(ctx, outs[6]), db, atol(dtype), rtol(dtype), "glu db");
      rill_test::require_close(rill_test::read(ctx, outs[7]), glu_id, atol(dtype), rtol(dtype), "glu identity");
      for (const auto& [act, first, name] : {std::tuple{0, 8, "identity"}, std::tuple{2, 10, "silu"}}) {
        rill::ref::glu_backward(a, b, dy, act, da, db);
        rill_test::require_close(rill_test::read(ctx, outs[size_t(first)]), da, atol(dtype), rtol(dtype),
                                 std::string("glu da, ") + name);
        rill_test::require_close(rill_test::read(ctx, outs[size_t(first) + 1]), db, atol(dtype), rtol(dtype),
                                 std::string("glu db, ") + name);
      }
    }
  }
}

// The kernel a GLU forward over n f32 elements dispatches on ctx.
std::string glu_kernel(rill::Context& ctx, int64_t n) {
  auto a = rill_test::empty_tensor(ctx, DType::kF32, {n}), out = rill_test::empty_tensor(ctx, DType::kF32, {n});
  return rill_test::kernel_of(ctx, [&](rill::Sequence& seq) { return ops::glu_forward(seq, a, a, out); });
}

}  // namespace

// CPU drivers take 4 elements per invocation, the inputs read as texels, where the count allows
// (the `_tx` kernels); elementwise_texel=off keeps one element per invocation everywhere.
GPU_TEST_CASE("add, mul, SiLU and GLU match the reference over odd sizes", "[elementwise][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  rill::Context ctx = rill_test::make_context(options);
  const bool cpu = ctx.kernel_variant("util/saxpy").value() == "cpu";
  CHECK(glu_kernel(ctx, 1000) ==
        (cpu && ctx.device().caps.texel_buffer_f32x4 ? "elementwise/glu_tx_f32" : "elementwise/glu_f32"));
  CHECK(glu_kernel(ctx, 1001) == "elementwise/glu_f32");
  check_elementwise(ctx);
  options.kernel_plan = "elementwise_texel=off";
  rill::Context plain = rill_test::make_context(options);
  CHECK(glu_kernel(plain, 1000) == "elementwise/glu_f32");
  check_elementwise(plain);
}

namespace {

// f32 -> f16 -> f32 on ctx over odd sizes and whole texels: each value as the host rounds it (to
// nearest), or toward zero where the driver converts that way; from 65520 on (where rounding to
// nearest overflows) +-Inf on every device, also one that rounds toward zero (rill_common.glsl's
// to_sfloat); NaN stays NaN; f16 -> f32 is exact.
void check_convert(rill::Context& ctx) {
  uint32_t seed = 40;
  for (int64_t n : {1, 7, 12, 257, 1000}) {
    INFO("n " << n);
    std::vector<float> src = rill_test::random_vector(size_t(n), ++seed, -3000.0f, 3000.0f);
    const float specials[] = {70000.0f, -1e30f, std::nanf(""), 65504.0f, -0.0f, 0.333333f, 65520.0f, -65519.0f};
    for (size_t i = 0; i < std::size(specials) && i < src.size(); ++i) src[src.size() - 1 - i] = specials[i];
    auto f32 = rill_test::tensor_from(ctx, DType::kF32, {n}, src);
    auto f16 = rill_test::empty_tensor(ctx, DType::kF16, {n}), back = rill_test::empty_tensor(ctx, DType::kF32, {n});
    auto copied = rill_test::empty_tensor(ctx, DType::kF32, {n});
    auto seq = ctx.sequence();
    REQUIRE(ops::convert(*seq, f32, f16).is_ok());
    REQUIRE(ops::convert(*seq, f16, back).is_ok());
    REQUIRE(ops::convert(*seq, f32, copied).is_ok());  // one type: a copy
    REQUIRE(seq->run().is_ok());
    const auto got = rill_test::read(ctx, back);
    for (size_t i = 0; i < src.size(); ++i) {
      INFO("value " << src[i] << " came back as " << got[i]);
      const float nearest = rill::half_to_float(rill::float_to_half(src[i]));
      if (std::isnan(src[i])) {
        CHECK(std::isnan(got[i]));
      } else if (std::fabs(src[i]) >= 65520.0f) {
        CHECK(std::isinf(got[i]));
        CHECK(std::signbit(got[i]) == std::signbit(src[i]));
      } else if (got[i] != nearest) {  // toward zero: the f16 just below in magnitude
        CHECK(std::fabs(got[i]) < std::fabs(src[i]));
        CHECK(std::fabs(got[i] - src[i]) <= std::fabs(src[i]) * (1.0f / 1024.0f));
      }
    }
    const auto copy = rill_test::read(ctx, copied);
    for (size_t i = 0; i < src.size(); ++i)
      if (!std::isnan(src[i])) CHECK(copy[i] == src[i]);
  }
}

}  // namespace

// Both kernel families, and the CPU drivers' texel form switched off.
GPU_TEST_CASE("convert turns f32 into f16 and back as a cast does", "[elementwise][gpu]") {
  if (rill_test::float_dtypes(rill_test::make_context()).back() != DType::kF16) {
    WARN("the device stores no f16: nothing to convert to");
    return;
  }
  for (rill::Context& ctx : rill_test::both_kernel_families()) check_convert(ctx);
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_plan = "elementwise_texel=off";
  rill::Context plain = rill_test::make_context(options);
  check_convert(plain);
}

// out[l, h * D + d] = in[h, l, d], over head widths with and without whole texels, f32 and f16,
// with the CPU drivers' texel form and without it.
GPU_TEST_CASE("the language model's head merge matches plain loops", "[elementwise][gpu]") {
  for (const char* plan : {"", "elementwise_texel=off"}) {
    rill::ContextOptions options = rill_test::validated_options();
    options.kernel_plan = plan;
    rill::Context ctx = rill_test::make_context(options);
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const auto [heads, len, dim] : {std::array<int64_t, 3>{3, 5, 8}, {1, 7, 4}, {4, 9, 3}, {2, 33, 12}}) {
        INFO("plan '" << plan << "' heads " << heads << " len " << len << " dim " << dim << " f16 "
                      << (dtype == DType::kF16));
        const auto in = rill_test::stored(rill_test::random_vector(size_t(heads * len * dim), 31), dtype);
        auto tin = rill_test::tensor_from(ctx, dtype, {heads, len, dim}, in);
        auto tout = rill_test::empty_tensor(ctx, dtype, {len, heads * dim});
        auto seq = ctx.sequence();
        REQUIRE(rill::lm::detail::merge_heads(*seq, tin, tout).is_ok());
        REQUIRE(seq->run().is_ok());
        std::vector<float> want(in.size());
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t l = 0; l < len; ++l)
            for (int64_t d = 0; d < dim; ++d)
              want[size_t((l * heads + h) * dim + d)] = in[size_t((h * len + l) * dim + d)];
        rill_test::require_close(rill_test::read(ctx, tout), want, 0.0, 0.0, "merged");
      }
    }
  }
}

// The GLU backward reference (what the GPU kernels are held to) against central differences of
// its forward reference: sum(dy * act(a) * b) moved by each a and b in turn.
TEST_CASE("the GLU backward reference equals finite differences of its forward", "[elementwise]") {
  const std::vector<float> a = {-5.0f, -1.25f, -0.5f, 0.0f, 0.75f, 2.5f, 6.0f};
  const std::vector<float> b = {1.5f, -0.75f, 2.0f, -3.0f, 0.5f, -1.0f, 0.25f};
  const std::vector<float> dy = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.5f, -2.0f};
  for (int act : {0, 1, 2}) {
    std::vector<float> da, db;
    rill::ref::glu_backward(a, b, dy, act, da, db);
    REQUIRE(da.size() == a.size());
    REQUIRE(db.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      // Each element alone (GLU is elementwise), moved by h = 1/64 (exact in f32) both ways.
      const float h = 1.0f / 64.0f;
      auto loss = [&](float ai, float bi) {
        std::vector<float> y;
        rill::ref::glu_forward({ai}, {bi}, act, y);
        return double(dy[i]) * y[0];
      };
      const double fd_a = (loss(a[i] + h, b[i]) - loss(a[i] - h, b[i])) / (2.0 * h);
      const double fd_b = (loss(a[i], b[i] + h) - loss(a[i], b[i] - h)) / (2.0 * h);
      INFO("act " << act << " element " << i);
      CHECK(da[i] == Approx(fd_a).epsilon(2e-3).margin(2e-4));
      CHECK(db[i] == Approx(fd_b).epsilon(2e-3).margin(2e-4));
    }
  }
}

TEST_CASE("activation derivatives equal central finite differences", "[elementwise]") {
  for (int act : {0, 1, 2}) {
    for (double x : {-6.0, -1.3, -0.2, 0.0, 0.7, 2.5, 9.0}) {
      const double h = 1e-5;
      const double fd = (rill::ref::activation(act, x + h) - rill::ref::activation(act, x - h)) / (2 * h);
      INFO("act " << act << " x " << x);
      CHECK(rill::ref::activation_grad(act, x) == Approx(fd).margin(1e-7));
    }
  }
}

GPU_TEST_CASE("embedding gathers rows, counts bad ids, and sums gradients per row", "[elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    const int64_t vocab = 13, dim = 7;
    const std::vector<uint32_t> ids = {3, 0, 12, 3, 99, 5, 3, 12, 1000000};  // two out of range
    const auto table = rill_test::stored(rill_test::random_vector(size_t(vocab * dim), 3), dtype);
    const auto dy = rill_test::stored(rill_test::random_vector(ids.size() * size_t(dim), 4), dtype);
    std::vector<float> out_ref, dtable_ref;
    rill::ref::embedding_forward(ids, table, vocab, dim, out_ref);
    rill::ref::embedding_backward(ids, dy, vocab, dim, dtable_ref);
    auto tids = u32_tensor(ctx, ids);
    auto ttable = rill_test::tensor_from(ctx, dtype, {vocab, dim}, table);
    auto tout = rill_test::empty_tensor(ctx, dtype, {int64_t(ids.size()), dim});
    auto terr = rill_test::empty_tensor(ctx, DType::kU32, {1});
    auto tdy = rill_test::tensor_from(ctx, dtype, {int64_t(ids.size()), dim}, dy);
    auto tdtable = rill_test::empty_tensor(ctx, DType::kF32, {vocab, dim});
    auto tscaled = rill_test::empty_tensor(ctx, dtype, {int64_t(ids.size()), dim});
    auto seq = ctx.sequence();
    REQUIRE(ops::embedding_forward(*seq, tids, ttable, tout, terr).is_ok());
    REQUIRE(ops::embedding_forward(*seq, tids, ttable, tscaled, terr, 5.5f).is_ok());  // TransNormerLLM's sqrt(D)
    REQUIRE(ops::embedding_backward(*seq, tids, tdy, tdtable).is_ok());
    REQUIRE(seq->run(2).is_ok());  // the error count is zeroed by every replay
    rill_test::require_close(rill_test::read(ctx, tout), out_ref, 0.0, 0.0, "rows");
    std::vector<float> scaled_ref = out_ref;
    for (float& v : scaled_ref) v *= 5.5f;
    rill_test::require_close(rill_test::read(ctx, tscaled), scaled_ref, 1e-6, dtype == DType::kF16 ? 1e-3 : 1e-6, "scaled rows");
    rill_test::require_close(rill_test::read(ctx, tdtable), dtable_ref, 1e-6, 1e-6, "dtable");
    CHECK(read_u32(ctx, terr) == 2);
  }
}

// A table larger than one storage binding (the small-bindings profile: 64 KiB) is gathered in row
// blocks, each dispatch writing only its ids' rows; the bad ids are zeroed and counted once.
GPU_TEST_CASE("embedding gathers from a table larger than one binding", "[elementwise][gpu][own-limits]") {
  auto options = rill_test::validated_options();
  options.limit_profile = "small-bindings";
  auto ctx = rill_test::make_context(options);
  REQUIRE(ctx.device().caps.max_storage_buffer_range == 65536);
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    // f32 rows of 96 bytes: blocks of 680 rows (a multiple of 8 keeps each start 256-byte aligned).
    const int64_t vocab = dtype == DType::kF32 ? 1500 : 3001, dim = 24;
    INFO("vocab " << vocab << " f16 " << (dtype == DType::kF16));
    const std::vector<uint32_t> ids = {0, 679, 680, 1359, 1360, 1499, 1500, 7, uint32_t(vocab - 1), 4000000000u};
    const auto table = rill_test::stored(rill_test::random_vector(size_t(vocab * dim), 5), dtype);
    std::vector<float> out_ref, unused;
    rill::ref::embedding_forward(ids, table, vocab, dim, out_ref);
    auto tids = u32_tensor(ctx, ids);
    auto ttable = rill_test::tensor_from(ctx, dtype, {vocab, dim}, table);
    REQUIRE(ttable.size_bytes() > 65536);
    auto tout = rill_test::empty_tensor(ctx, dtype, {int64_t(ids.size()), dim});
    auto terr = rill_test::empty_tensor(ctx, DType::kU32, {1});
    auto seq = ctx.sequence();
    REQUIRE(ops::embedding_forward(*seq, tids, ttable, tout, terr, 2.0f).is_ok());
    REQUIRE(seq->run(2).is_ok());
    for (float& v : out_ref) v *= 2.0f;
    rill_test::require_close(rill_test::read(ctx, tout), out_ref, 0.0, 0.0, "rows");
    CHECK(read_u32(ctx, terr) == (dtype == DType::kF32 ? 2 : 1));
  }
  // A row wider than one binding cannot be split: refused, recording nothing (the zeroing of the
  // error count was recorded before the split was checked).
  auto tids = u32_tensor(ctx, {0, 1});
  auto wide = rill_test::empty_tensor(ctx, DType::kF32, {2, 20000});  // 80 KB rows
  auto out = rill_test::empty_tensor(ctx, DType::kF32, {2, 20000});
  auto terr = rill_test::empty_tensor(ctx, DType::kU32, {1});
  auto seq = ctx.sequence();
  const rill::Status refused = ops::embedding_forward(*seq, tids, wide, out, terr);
  INFO(refused.to_string());
  CHECK(refused.code() == rill::StatusCode::kOutOfRange);
  CHECK(refused.message().find("row") != std::string::npos);
  CHECK(seq->stats().dispatches == 0);
  CHECK(seq->stats().copies == 0);
}

GPU_TEST_CASE("Tensor::rows views rows in place and refuses misaligned or outside ranges", "[elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  const std::vector<float> values = rill_test::random_vector(128 * 3, 6);
  auto t = rill_test::tensor_from(ctx, DType::kF32, {128, 3}, values);
  auto view = t.rows(64, 64);  // 768 bytes in
  REQUIRE(view.is_ok());
  CHECK(view->shape() == std::vector<int64_t>{64, 3});
  CHECK(rill_test::read(ctx, *view) == std::vector<float>(values.begin() + 64 * 3, values.end()));
  CHECK(t.rows(1, 3).status().code() == rill::StatusCode::kInvalidArgument);    // 12 bytes in
  CHECK(t.rows(64, 65).status().code() == rill::StatusCode::kInvalidArgument);  // past the end
  CHECK(t.rows(0, 0).status().code() == rill::StatusCode::kInvalidArgument);    // empty
  CHECK(rill::Tensor().rows(0, 1).status().code() == rill::StatusCode::kInvalidArgument);
  auto flat = rill_test::tensor_from(ctx, DType::kF32, {384}, values);
  auto tail = flat.rows(320, 64);  // a 1-D tensor's rows are its elements
  REQUIRE(tail.is_ok());
  CHECK(rill_test::read(ctx, *tail) == std::vector<float>(values.begin() + 320, values.end()));
}

GPU_TEST_CASE("softmax and cross-entropy match the reference, stay finite, and differentiate", "[elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    for (auto [rows, vocab, scale] : {std::tuple<int64_t, int64_t, float>{1, 1, 1.0f}, {3, 7, 3.0f}, {5, 256, 5.0f},
                                      {2, 1000, 1.0f}, {4, 33, 1e4f}}) {
      INFO("rows " << rows << " vocab " << vocab << " scale " << scale << " f16 " << (dtype == DType::kF16));
      auto logits = rill_test::random_vector(size_t(rows * vocab), uint32_t(rows * vocab), -scale, scale);
      if (dtype == DType::kF16 && scale > 100.0f) continue;  // 1e4 logits are not f16 values worth testing
      logits = rill_test::stored(logits, dtype);
      std::vector<uint32_t> targets;
      for (int64_t r = 0; r < rows; ++r) targets.push_back(uint32_t((r * 7) % vocab));
      const auto dloss = rill_test::random_vector(size_t(rows), 9);
      std::vector<float> probs_ref, loss_ref;
      rill::ref::softmax_cross_entropy(logits, targets, rows, vocab, probs_ref, loss_ref);
      auto tl = rill_test::tensor_from(ctx, dtype, {rows, vocab}, logits);
      auto tt = u32_tensor(ctx, targets);
      auto tp = rill_test::empty_tensor(ctx, dtype, {rows, vocab});
      auto tp2 = rill_test::empty_tensor(ctx, dtype, {rows, vocab});
      auto tloss = rill_test::empty_tensor(ctx, DType::kF32, {rows});
      auto tdloss = rill_test::tensor_from(ctx, DType::kF32, {rows}, dloss);
      auto tdl = rill_test::empty_tensor(ctx, dtype, {rows, vocab});
      auto seq = ctx.sequence();
      REQUIRE(ops::softmax_cross_entropy_forward(*seq, tl, tt, tp, tloss).is_ok());
      REQUIRE(ops::softmax_forward(*seq, tl, tp2).is_ok());
      REQUIRE(ops::softmax_cross_entropy_backward(*seq, tp, tt, tdloss, tdl).is_ok());
      // A target past the vocabulary: its row's loss NaN (forward), its dlogits NaN too (they were
      // probs * dloss, finite and wrong).
      std::vector<uint32_t> bad_targets = targets;
      bad_targets.back() = uint32_t(vocab + 3);
      auto tbad = u32_tensor(ctx, bad_targets);
      auto tdl_bad = rill_test::empty_tensor(ctx, dtype, {rows, vocab});
      REQUIRE(ops::softmax_cross_entropy_backward(*seq, tp, tbad, tdloss, tdl_bad).is_ok());
      REQUIRE(seq->run().is_ok());
      const auto dl_bad = rill_test::read(ctx, tdl_bad), dl_good = rill_test::read(ctx, tdl);
      for (int64_t c = 0; c < vocab; ++c) CHECK(std::isnan(dl_bad[size_t((rows - 1) * vocab + c)]));
      for (size_t i = 0; i < size_t((rows - 1) * vocab); ++i) CHECK(dl_bad[i] == dl_good[i]);
      std::vector<float> dl_ref(probs_ref.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < vocab; ++c)
          dl_ref[size_t(r * vocab + c)] =
              (rill_test::stored(probs_ref, dtype)[size_t(r * vocab + c)] - (uint32_t(c) == targets[size_t(r)] ? 1.0f : 0.0f)) *
              dloss[size_t(r)];
      rill_test::require_close(rill_test::read(ctx, tp), probs_ref, atol(dtype), rtol(dtype), "probs");
      rill_test::require_close(rill_test::read(ctx, tp2), probs_ref, atol(dtype), rtol(dtype), "softmax");
      rill_test::require_close(rill_test::read(ctx, tloss), loss_ref, 1e-5 * (1 + scale), 1e-5, "loss");
      rill_test::require_close(rill_test::read(ctx, tdl), dl_ref, atol(dtype), rtol(dtype), "dlogits");
    }
  }
}

// probs written over the logits (in place): the loss reads the target's logit before any
// probability lands on it. And logits of 1e4: the loss rounds at its own scale, not at 1e4's.
GPU_TEST_CASE("softmax cross-entropy in place, and at large logits, matches the reference", "[elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  for (auto [rows, vocab, scale, shift] :
       {std::tuple<int64_t, int64_t, float, float>{3, 1000, 5.0f, 0.0f}, {2, 3, 3.0f, 1e4f}}) {
    INFO("vocab " << vocab << " shift " << shift);
    auto logits = rill_test::random_vector(size_t(rows * vocab), 77, -scale, scale);
    for (float& l : logits) l += shift;
    std::vector<uint32_t> targets;
    for (int64_t r = 0; r < rows; ++r) targets.push_back(uint32_t((r * 7 + 1) % vocab));
    std::vector<float> probs_ref, loss_ref;
    rill::ref::softmax_cross_entropy(logits, targets, rows, vocab, probs_ref, loss_ref);
    auto tl = rill_test::tensor_from(ctx, DType::kF32, {rows, vocab}, logits);
    auto tt = u32_tensor(ctx, targets);
    auto tloss = rill_test::empty_tensor(ctx, DType::kF32, {rows});
    auto seq = ctx.sequence();
    REQUIRE(ops::softmax_cross_entropy_forward(*seq, tl, tt, tl, tloss).is_ok());
    REQUIRE(seq->run().is_ok());
    rill_test::require_close(rill_test::read(ctx, tl), probs_ref, 1e-6, 1e-5, "probs in place");
    rill_test::require_close(rill_test::read(ctx, tloss), loss_ref, 1e-6, 1e-5, "loss");
  }
}

TEST_CASE("the cross-entropy gradient equals central finite differences of the reference loss", "[elementwise]") {
  const int64_t vocab = 9;
  const auto logits = rill_test::random_vector(size_t(vocab), 2, -2.0f, 2.0f);
  const std::vector<uint32_t> target = {4};
  std::vector<float> probs, loss;
  rill::ref::softmax_cross_entropy(logits, target, 1, vocab, probs, loss);
  for (int64_t c = 0; c < vocab; ++c) {
    auto up = logits, down = logits;
    up[size_t(c)] += 1e-3f;
    down[size_t(c)] -= 1e-3f;
    std::vector<float> p, lu, ld;
    rill::ref::softmax_cross_entropy(up, target, 1, vocab, p, lu);
    rill::ref::softmax_cross_entropy(down, target, 1, vocab, p, ld);
    const double fd = (double(lu[0]) - ld[0]) / 2e-3;
    CHECK(probs[size_t(c)] - (c == 4 ? 1.0 : 0.0) == Approx(fd).margin(2e-3));
  }
}

GPU_TEST_CASE("elementwise ops reject mismatched inputs", "[elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  auto a = rill_test::empty_tensor(ctx, DType::kF32, {10});
  auto b = rill_test::empty_tensor(ctx, DType::kF32, {11});
  auto h = rill_test::empty_tensor(ctx, DType::kF16, {10});
  auto ids_f = rill_test::empty_tensor(ctx, DType::kF32, {4});
  auto table = rill_test::empty_tensor(ctx, DType::kF32, {5, 2});
  auto out = rill_test::empty_tensor(ctx, DType::kF32, {4, 2});
  auto err = rill_test::empty_tensor(ctx, DType::kU32, {1});
  auto targets_short = rill_test::empty_tensor(ctx, DType::kU32, {1});
  auto loss = rill_test::empty_tensor(ctx, DType::kF32, {5});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  CHECK(ops::add(*seq, a, b, a).code() == StatusCode::kInvalidArgument);
  CHECK(ops::mul(*seq, a, h, a).code() == StatusCode::kInvalidArgument);
  CHECK(ops::embedding_forward(*seq, ids_f, table, out, err).code() == StatusCode::kInvalidArgument);
  CHECK(ops::softmax_cross_entropy_forward(*seq, table, targets_short, table, loss).code() == StatusCode::kInvalidArgument);
  CHECK(ops::convert(*seq, a, b).code() == StatusCode::kInvalidArgument);
  CHECK(ops::convert(*seq, ids_f, err).code() == StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
}
