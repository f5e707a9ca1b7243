// RMSNorm forward, fused residual forward and backward against the double-precision reference
// over odd shapes, f32 and f16 storage; backward also against central finite differences.
#include "op_test.hpp"
#include "rill/ops/rmsnorm.hpp"
#include "rmsnorm.hpp"

namespace {

using rill::DType;

// Declared tolerances (absolute + relative to the reference value).
constexpr double kF32Atol = 2e-6, kF32Rtol = 2e-5;
constexpr double kF16Atol = 2e-3, kF16Rtol = 2e-3;  // one f16 rounding of the output, plus f32 error

struct Shape {
  int64_t rows, dim;
  bool emulated = true;  // also run under emulation (one shape of each kernel path)
};
// {300, 17} and {1100, 3}: dgain summed in several row blocks (GPU and CPU-driver plans); {9000, 6}:
// so many blocks that the GPU plan sums them in slices. {2, 8192} and {3, 4097}: the generic kernels
// (rows past the register kernels' widths), with and without vector rows.
const Shape kShapes[] = {{1, 1},          {1, 7, false},    {5, 12},    {3, 64, false},   {7, 65},
                         {5, 127, false}, {64, 63, false},  {13, 1000}, {3, 4096, false}, {2, 8192},
                         {3, 4097},       {300, 17, false}, {1100, 3},  {9000, 6}};

// kShapes, under emulation only one shape of each kernel path: the register kernels compile a
// pipeline per row width, each a minute or more under qemu (rows of 4096, with 128 unrolled loads
// per lane, 6-8 minutes; the backward over every shape 3-4 minutes more).
std::vector<Shape> shapes_to_run() {
  if (!rill_test::emulated()) return {std::begin(kShapes), std::end(kShapes)};
  WARN(
      "6 of the 14 row shapes (rows of 4096 among them) left out under emulation (compile time); run natively in "
      "every other suite");
  std::vector<Shape> out;
  for (const Shape& s : kShapes)
    if (s.emulated) out.push_back(s);
  return out;
}

}  // namespace

namespace {

// The shapes of whole 4-element rows up to 1000 wide, and one generic (8192): those the CPU drivers'
// storage-buffer rows take where texels are turned off (rows of 4096 left out: compile time).
std::vector<Shape> storage_buffer_shapes() {
  std::vector<Shape> out;
  for (const Shape& s : shapes_to_run())
    if (s.dim % 4 == 0 && s.dim != 4096) out.push_back(s);
  return out;
}

// The forward over `shapes` with the kernels of one family ("cpu" or "gpu") under `plan`.
void check_forward(const char* family, const std::vector<Shape>& shapes = shapes_to_run(), const char* plan = "") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = family;
  options.kernel_plan = plan;
  rill::Context ctx = rill_test::make_context(options);
  {
    uint32_t seed = 1;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Shape& s : shapes) {
        for (bool with_gain : {true, false}) {
          ++seed;
          INFO(ctx.kernel_variant("util/saxpy").value()
               << " rows " << s.rows << " dim " << s.dim << " f16 " << (dtype == DType::kF16) << " gain " << with_gain
               << " seed " << seed);
          const auto x = rill_test::stored(rill_test::random_vector(size_t(s.rows * s.dim), seed, -3.0f, 3.0f), dtype);
          const auto g =
              with_gain ? rill_test::stored(rill_test::random_vector(size_t(s.dim), seed + 1000, 0.5f, 1.5f), dtype)
                        : std::vector<float>{};
          std::vector<float> y_ref, rstd_ref;
          rill::ref::rmsnorm_forward(x, g, s.rows, s.dim, 1e-5f, y_ref, rstd_ref);

          auto tx = rill_test::tensor_from(ctx, dtype, {s.rows, s.dim}, x, "x");
          auto ty = rill_test::empty_tensor(ctx, dtype, {s.rows, s.dim}, "y");
          auto tr = rill_test::empty_tensor(ctx, DType::kF32, {s.rows}, "rstd");
          rill::Tensor tg;
          if (with_gain) tg = rill_test::tensor_from(ctx, dtype, {s.dim}, g, "gain");
          auto seq = ctx.sequence();
          REQUIRE(rill::ops::rmsnorm_forward(*seq, tx, with_gain ? &tg : nullptr, ty, tr, 1e-5f).is_ok());
          REQUIRE(seq->run().is_ok());
          const bool f16 = dtype == DType::kF16;
          rill_test::require_close(rill_test::read(ctx, ty), y_ref, f16 ? kF16Atol : kF32Atol,
                                   f16 ? kF16Rtol : kF32Rtol, "y");
          rill_test::require_close(rill_test::read(ctx, tr), rstd_ref, 0.0, 2e-5, "rstd");
        }
      }
    }
  }
}

}  // namespace

// Per kernel family: the GPU family's register kernels (narrow rows) compile dozens of pipelines,
// which the arm64 suite under qemu leaves out with the other GPU tuning.
GPU_TEST_CASE("rmsnorm forward matches the reference over odd shapes with the cpu kernels", "[rmsnorm][gpu]") {
  check_forward("cpu");
}
GPU_TEST_CASE("rmsnorm forward matches the reference over odd shapes with the gpu kernels", "[rmsnorm][gpu]") {
  check_forward("gpu");
}

GPU_TEST_CASE("fused residual rmsnorm writes x + residual and its norm", "[rmsnorm][gpu]") {
  std::vector<rill::Context> contexts = rill_test::both_kernel_families();
  rill::ContextOptions plain = rill_test::validated_options();
  plain.kernel_variant = "cpu";
  plain.kernel_plan = "rmsnorm_texel=off";  // the CPU drivers' storage-buffer rows too
  contexts.push_back(rill_test::make_context(plain));
  for (rill::Context& ctx : contexts) {
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      // Rows of 1000 take the register kernel on CPU drivers (up to 4096, kernel_plan_norm.cpp); at 4096 its
      // fully unrolled 512-value rows took lavapipe over 6 minutes to compile, for no other path.
      for (const Shape& s : {Shape{1, 3}, Shape{5, 12}, Shape{9, 129}, Shape{4, 1000}}) {
        const auto x = rill_test::stored(rill_test::random_vector(size_t(s.rows * s.dim), 7), dtype);
        const auto r = rill_test::stored(rill_test::random_vector(size_t(s.rows * s.dim), 8), dtype);
        const auto g = rill_test::stored(rill_test::random_vector(size_t(s.dim), 9, 0.5f, 1.5f), dtype);
        std::vector<float> h(x.size());
        for (size_t i = 0; i < h.size(); ++i) h[i] = x[i] + r[i];
        h = rill_test::stored(h, dtype);
        std::vector<float> y_ref, rstd_ref;
        rill::ref::rmsnorm_forward(h, g, s.rows, s.dim, 1e-6f, y_ref, rstd_ref);
        auto tx = rill_test::tensor_from(ctx, dtype, {s.rows, s.dim}, x);
        auto tres = rill_test::tensor_from(ctx, dtype, {s.rows, s.dim}, r);
        auto tg = rill_test::tensor_from(ctx, dtype, {s.dim}, g);
        auto th = rill_test::empty_tensor(ctx, dtype, {s.rows, s.dim});
        auto ty = rill_test::empty_tensor(ctx, dtype, {s.rows, s.dim});
        auto trs = rill_test::empty_tensor(ctx, DType::kF32, {s.rows});
        auto seq = ctx.sequence();
        REQUIRE(rill::ops::rmsnorm_residual_forward(*seq, tx, tres, &tg, th, ty, trs).is_ok());
        REQUIRE(seq->run().is_ok());
        const bool f16 = dtype == DType::kF16;
        rill_test::require_close(rill_test::read(ctx, th), h, 0.0, 0.0, "h");
        rill_test::require_close(rill_test::read(ctx, ty), y_ref, f16 ? kF16Atol : kF32Atol, f16 ? kF16Rtol : kF32Rtol,
                                 "y");
        rill_test::require_close(rill_test::read(ctx, trs), rstd_ref, kF32Atol, kF32Rtol, "rstd");  // f32 from f16 h
      }
    }
  }
}

// A row whose squares overflow the f32 sum normalizes to NaN, as the reference says (a row of
// zeros, inversesqrt(inf)'s answer, would pass as a result); the rows beside it are untouched, and
// a row of large values that stay in range is exact.
GPU_TEST_CASE("rmsnorm rows whose sum of squares overflows f32 are NaN, not zeros", "[rmsnorm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (const Shape s : {Shape{4, 7}, Shape{4, 4097}}) {  // a register kernel and the generic one
      INFO(ctx.kernel_variant("util/saxpy").value() << " dim " << s.dim);
      auto x = rill_test::random_vector(size_t(s.rows * s.dim), 31, -3.0f, 3.0f);
      x[size_t(s.dim + s.dim / 2)] = 1e20f;                                   // row 1 overflows
      for (int64_t c = 0; c < s.dim; ++c) x[size_t(3 * s.dim + c)] *= 3e16f;  // row 3: large, in range
      const auto g = rill_test::random_vector(size_t(s.dim), 32, 0.5f, 1.5f);
      std::vector<float> y_ref, rstd_ref;
      rill::ref::rmsnorm_forward(x, g, s.rows, s.dim, 1e-5f, y_ref, rstd_ref);
      REQUIRE(std::isnan(rstd_ref[1]));
      REQUIRE(std::isfinite(rstd_ref[3]));
      auto tx = rill_test::tensor_from(ctx, DType::kF32, {s.rows, s.dim}, x, "x");
      auto tg = rill_test::tensor_from(ctx, DType::kF32, {s.dim}, g, "gain");
      auto ty = rill_test::empty_tensor(ctx, DType::kF32, {s.rows, s.dim}, "y");
      auto tr = rill_test::empty_tensor(ctx, DType::kF32, {s.rows}, "rstd");
      auto seq = ctx.sequence();
      REQUIRE(rill::ops::rmsnorm_forward(*seq, tx, &tg, ty, tr, 1e-5f).is_ok());
      REQUIRE(seq->run().is_ok());
      const auto y = rill_test::read(ctx, ty), rstd = rill_test::read(ctx, tr);
      CHECK(std::isnan(rstd[1]));
      CHECK(std::all_of(y.begin() + s.dim, y.begin() + 2 * s.dim, [](float v) { return std::isnan(v); }));
      for (int64_t r : {0, 2, 3}) {
        INFO("row " << r);
        const auto row = [&](const std::vector<float>& v) {
          return std::vector<float>(v.begin() + r * s.dim, v.begin() + (r + 1) * s.dim);
        };
        rill_test::require_close(row(y), row(y_ref), kF32Atol, kF32Rtol, "y");
        rill_test::require_close({rstd[size_t(r)]}, {rstd_ref[size_t(r)]}, 0.0, 2e-5, "rstd");
      }
    }
  }
}

namespace {

// The backward (dx, accumulated dx, dgain) over `shapes` with the kernels of one family under `plan`.
void check_backward(const char* family, const std::vector<Shape>& shapes = shapes_to_run(), const char* plan = "") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = family;
  options.kernel_plan = plan;
  rill::Context ctx = rill_test::make_context(options);
  {
    uint32_t seed = 100;
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (const Shape& s : shapes) {
        ++seed;
        INFO(ctx.kernel_variant("util/saxpy").value()
             << " rows " << s.rows << " dim " << s.dim << " f16 " << (dtype == DType::kF16) << " seed " << seed);
        const auto x = rill_test::stored(rill_test::random_vector(size_t(s.rows * s.dim), seed, -2.0f, 2.0f), dtype);
        const auto g = rill_test::stored(rill_test::random_vector(size_t(s.dim), seed + 1, 0.5f, 1.5f), dtype);
        const auto dy = rill_test::stored(rill_test::random_vector(size_t(s.rows * s.dim), seed + 2), dtype);
        const auto prior = rill_test::stored(rill_test::random_vector(size_t(s.rows * s.dim), seed + 3), dtype);
        std::vector<float> y, rstd, dx_ref, dg_ref;
        rill::ref::rmsnorm_forward(x, g, s.rows, s.dim, 1e-5f, y, rstd);
        rill::ref::rmsnorm_backward(x, g, rstd, dy, s.rows, s.dim, dx_ref, dg_ref);
        std::vector<float> dx_plain_ref, dg_plain_ref;  // SRMSNorm's: no gain, the same as gains of 1
        rill::ref::rmsnorm_backward(x, std::vector<float>(size_t(s.dim), 1.0f), rstd, dy, s.rows, s.dim, dx_plain_ref,
                                    dg_plain_ref);

        auto tx = rill_test::tensor_from(ctx, dtype, {s.rows, s.dim}, x);
        auto tg = rill_test::tensor_from(ctx, dtype, {s.dim}, g);
        auto tdy = rill_test::tensor_from(ctx, dtype, {s.rows, s.dim}, dy);
        auto ty = rill_test::empty_tensor(ctx, dtype, {s.rows, s.dim});
        auto tr = rill_test::empty_tensor(ctx, DType::kF32, {s.rows});
        auto tdx = rill_test::empty_tensor(ctx, dtype, {s.rows, s.dim});
        auto tacc = rill_test::tensor_from(ctx, dtype, {s.rows, s.dim}, prior);
        auto tdg = rill_test::empty_tensor(ctx, DType::kF32, {s.dim});
        auto tdx_plain = rill_test::empty_tensor(ctx, dtype, {s.rows, s.dim});
        auto seq = ctx.sequence();
        REQUIRE(rill::ops::rmsnorm_forward(*seq, tx, &tg, ty, tr, 1e-5f).is_ok());
        REQUIRE(rill::ops::rmsnorm_backward(*seq, tx, &tg, tr, tdy, tdx, &tdg).is_ok());
        REQUIRE(rill::ops::rmsnorm_backward(*seq, tx, &tg, tr, tdy, tacc, nullptr, /*accumulate=*/true).is_ok());
        REQUIRE(rill::ops::rmsnorm_backward(*seq, tx, nullptr, tr, tdy, tdx_plain, nullptr).is_ok());
        REQUIRE(seq->run().is_ok());
        const bool f16 = dtype == DType::kF16;
        // Gradients are sums of products of O(1) terms; scale the absolute tolerance with them.
        const double atol = f16 ? 4e-3 : 2e-5, rtol = f16 ? 4e-3 : 1e-4;
        rill_test::require_close(rill_test::read(ctx, tdx), dx_ref, atol, rtol, "dx");
        std::vector<float> acc_ref(prior.size());
        for (size_t i = 0; i < acc_ref.size(); ++i) acc_ref[i] = prior[i] + dx_ref[i];
        rill_test::require_close(rill_test::read(ctx, tacc), acc_ref, 2 * atol, rtol, "accumulated dx");
        rill_test::require_close(rill_test::read(ctx, tdg), dg_ref, atol * std::sqrt(double(s.rows)), rtol, "dgain");
        rill_test::require_close(rill_test::read(ctx, tdx_plain), dx_plain_ref, atol, rtol, "dx without a gain");
      }
    }
  }
}

}  // namespace

GPU_TEST_CASE("rmsnorm backward and dgain match the reference with the cpu kernels", "[rmsnorm][gpu]") {
  check_backward("cpu");
}
GPU_TEST_CASE("rmsnorm backward and dgain match the reference with the gpu kernels", "[rmsnorm][gpu]") {
  check_backward("gpu");
}

namespace {

// The kernel a forward (or, with `backward`, the first kernel of a backward without dgain) of
// rows x dim f32 dispatches on ctx.
std::string rmsnorm_kernel(rill::Context& ctx, int64_t rows, int64_t dim, bool backward) {
  auto x = rill_test::empty_tensor(ctx, DType::kF32, {rows, dim});
  auto out = rill_test::empty_tensor(ctx, DType::kF32, {rows, dim});
  auto gain = rill_test::empty_tensor(ctx, DType::kF32, {dim});
  auto rstd = rill_test::empty_tensor(ctx, DType::kF32, {rows});
  return rill_test::kernel_of(ctx, [&](rill::Sequence& seq) {
    return backward ? rill::ops::rmsnorm_backward(seq, x, &gain, rstd, x, out, nullptr)
                    : rill::ops::rmsnorm_forward(seq, x, &gain, out, rstd, 1e-5f);
  });
}

// The kernels a device with subgroup arithmetic dispatches: texel rows where it backs them
// (`texels`), storage-buffer rows under rmsnorm_texel=off (`plain`) and for rows of part texels.
void check_kernel_names(rill::Context& texels, rill::Context& plain) {
  const bool backed = texels.device().caps.texel_buffer_f32x4;
  CHECK(rmsnorm_kernel(texels, 5, 12, false) ==
        (backed ? "rmsnorm/rmsnorm_fwd_register_tx_f32" : "rmsnorm/rmsnorm_fwd_register_vec4_f32"));
  CHECK(rmsnorm_kernel(texels, 2, 8192, false) ==
        (backed ? "rmsnorm/rmsnorm_fwd_tx_f32" : "rmsnorm/rmsnorm_fwd_vec4_f32"));
  CHECK(rmsnorm_kernel(texels, 5, 12, true) ==
        (backed ? "rmsnorm/rmsnorm_bwd_register_tx_f32" : "rmsnorm/rmsnorm_bwd_register_vec4_f32"));
  CHECK(rmsnorm_kernel(texels, 2, 8192, true) ==
        (backed ? "rmsnorm/rmsnorm_bwd_tx_f32" : "rmsnorm/rmsnorm_bwd_vec4_f32"));
  CHECK(rmsnorm_kernel(texels, 5, 13, false) == "rmsnorm/rmsnorm_fwd_register_f32");  // not whole texels
  CHECK(rmsnorm_kernel(plain, 5, 12, false) == "rmsnorm/rmsnorm_fwd_register_vec4_f32");
  CHECK(rmsnorm_kernel(plain, 2, 8192, true) == "rmsnorm/rmsnorm_bwd_vec4_f32");
}

}  // namespace

// The CPU drivers read rows of whole texels as texels (the `_tx` kernels, which the cases above
// run where the device backs them); here the storage-buffer rows devices without them take.
GPU_TEST_CASE("rmsnorm with the cpu kernels' storage-buffer rows", "[rmsnorm][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  rill::Context texels = rill_test::make_context(options);
  options.kernel_plan = "rmsnorm_texel=off";
  rill::Context plain = rill_test::make_context(options);
  if (!texels.device().caps.subgroup_arithmetic) {
    // The `_nosubgroup` kernels (shared-memory sums), which have no texel form.
    CHECK(rmsnorm_kernel(texels, 5, 12, false) == "rmsnorm/rmsnorm_fwd_nosubgroup_vec4_f32");
    CHECK(rmsnorm_kernel(texels, 2, 8192, true) == "rmsnorm/rmsnorm_bwd_nosubgroup_vec4_f32");
  } else {
    check_kernel_names(texels, plain);
  }
  check_forward("cpu", storage_buffer_shapes(), "rmsnorm_texel=off");
  check_backward("cpu", storage_buffer_shapes(), "rmsnorm_texel=off");
}

TEST_CASE("the rmsnorm reference backward equals central finite differences", "[rmsnorm]") {
  // L = sum(w * y): dL/dx and dL/dgain by central differences of the double-accumulating forward.
  const int64_t rows = 3, dim = 17;
  const auto x = rill_test::random_vector(size_t(rows * dim), 5, -2.0f, 2.0f);
  const auto g = rill_test::random_vector(size_t(dim), 6, 0.5f, 1.5f);
  const auto w = rill_test::random_vector(size_t(rows * dim), 7);
  auto loss = [&](const std::vector<float>& xs, const std::vector<float>& gs) {
    std::vector<float> y, rstd;
    rill::ref::rmsnorm_forward(xs, gs, rows, dim, 1e-5f, y, rstd);
    double l = 0.0;
    for (size_t i = 0; i < y.size(); ++i) l += double(w[i]) * y[i];
    return l;
  };
  std::vector<float> y, rstd, dx, dg;
  rill::ref::rmsnorm_forward(x, g, rows, dim, 1e-5f, y, rstd);
  rill::ref::rmsnorm_backward(x, g, rstd, w, rows, dim, dx, dg);
  const float h = 1e-2f;
  for (size_t i = 0; i < x.size(); ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    const double fd = (loss(xp, g) - loss(xm, g)) / (2.0 * h);
    INFO("dx[" << i << "]");
    CHECK(dx[i] == Approx(fd).margin(2e-3).epsilon(2e-3));
  }
  for (size_t i = 0; i < g.size(); ++i) {
    auto gp = g, gm = g;
    gp[i] += h;
    gm[i] -= h;
    const double fd = (loss(x, gp) - loss(x, gm)) / (2.0 * h);
    INFO("dgain[" << i << "]");
    CHECK(dg[i] == Approx(fd).margin(2e-3).epsilon(2e-3));
  }
}

GPU_TEST_CASE("rmsnorm rejects mismatched shapes and dtypes", "[rmsnorm][gpu]") {
  auto ctx = rill_test::make_context();
  auto x = rill_test::empty_tensor(ctx, DType::kF32, {4, 8});
  auto y = rill_test::empty_tensor(ctx, DType::kF32, {4, 8});
  auto wrong = rill_test::empty_tensor(ctx, DType::kF32, {4, 9});
  auto half = rill_test::empty_tensor(ctx, DType::kF16, {4, 8});
  auto rstd = rill_test::empty_tensor(ctx, DType::kF32, {4});
  auto short_rstd = rill_test::empty_tensor(ctx, DType::kF32, {3});
  auto ints = rill_test::empty_tensor(ctx, DType::kI32, {4, 8});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  CHECK(rill::ops::rmsnorm_forward(*seq, x, nullptr, wrong, rstd).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::rmsnorm_forward(*seq, x, nullptr, half, rstd).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::rmsnorm_forward(*seq, x, nullptr, y, short_rstd).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::rmsnorm_forward(*seq, x, &wrong, y, rstd).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::rmsnorm_forward(*seq, ints, nullptr, ints, rstd).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::rmsnorm_forward(*seq, x, nullptr, y, rstd, -1.0f).code() == StatusCode::kInvalidArgument);
  // eps 0 made an all-zero row NaN, an infinite one every y 0.
  CHECK(rill::ops::rmsnorm_forward(*seq, x, nullptr, y, rstd, 0.0f).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::rmsnorm_forward(*seq, x, nullptr, y, rstd, INFINITY).code() == StatusCode::kInvalidArgument);
  // The residual form's two outputs in one tensor kept only y.
  const rill::Status one_output = rill::ops::rmsnorm_residual_forward(*seq, x, y, nullptr, wrong, wrong, rstd);
  CHECK(one_output.code() == StatusCode::kInvalidArgument);
  auto h = rill_test::empty_tensor(ctx, DType::kF32, {4, 8});
  auto y2 = rill_test::empty_tensor(ctx, DType::kF32, {4, 8});
  const rill::Status shared = rill::ops::rmsnorm_residual_forward(*seq, x, y, nullptr, h, h, rstd);
  CHECK(shared.code() == StatusCode::kInvalidArgument);
  CHECK(shared.message().find("h") != std::string::npos);
  CHECK(rill::ops::rmsnorm_residual_forward(*seq, x, y, nullptr, h, y2, rstd).is_ok());  // apart: fine
  CHECK(seq->stats().dispatches == 1);
  seq = ctx.sequence();
  auto dg = rill_test::empty_tensor(ctx, DType::kF32, {8});
  CHECK(rill::ops::rmsnorm_backward(*seq, x, nullptr, rstd, y, y, &dg).code() == StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
}

namespace {

// The f32 backward with dgain of rows x dim against the reference, dx written over dy or apart.
void check_backward_with_gain(rill::Context& ctx, int64_t rows, int64_t dim, uint32_t seed, bool in_place) {
  const auto x = rill_test::random_vector(size_t(rows * dim), seed, -2.0f, 2.0f);
  const auto g = rill_test::random_vector(size_t(dim), seed + 1, 0.5f, 1.5f);
  const auto dy = rill_test::random_vector(size_t(rows * dim), seed + 2);
  std::vector<float> y, rstd, dx_ref, dg_ref;
  rill::ref::rmsnorm_forward(x, g, rows, dim, 1e-5f, y, rstd);
  rill::ref::rmsnorm_backward(x, g, rstd, dy, rows, dim, dx_ref, dg_ref);
  auto tx = rill_test::tensor_from(ctx, DType::kF32, {rows, dim}, x);
  auto tg = rill_test::tensor_from(ctx, DType::kF32, {dim}, g);
  auto tdy = rill_test::tensor_from(ctx, DType::kF32, {rows, dim}, dy);
  auto ty = rill_test::empty_tensor(ctx, DType::kF32, {rows, dim});
  auto tr = rill_test::empty_tensor(ctx, DType::kF32, {rows});
  auto apart = rill_test::empty_tensor(ctx, DType::kF32, {rows, dim});
  const rill::Tensor& tdx = in_place ? tdy : apart;
  auto tdg = rill_test::empty_tensor(ctx, DType::kF32, {dim});
  auto seq = ctx.sequence();
  REQUIRE(rill::ops::rmsnorm_forward(*seq, tx, &tg, ty, tr, 1e-5f).is_ok());
  const rill::Status backward = rill::ops::rmsnorm_backward(*seq, tx, &tg, tr, tdy, tdx, &tdg);
  INFO(backward.to_string());
  REQUIRE(backward.is_ok());
  REQUIRE(seq->run().is_ok());
  rill_test::require_close(rill_test::read(ctx, tdx), dx_ref, 2e-5, 1e-4, "dx");
  rill_test::require_close(rill_test::read(ctx, tdg), dg_ref, 2e-5 * std::sqrt(double(rows)), 1e-4, "dgain");
}

}  // namespace

// dx written over dy: dgain reads dy (and x), so it runs before dx on the generic path (dims past
// the register kernels: 5000 on CPU drivers and GPUs); the register kernel reads first (200: 32
// elements or fewer per lane of lavapipe's 8, within the GPU family's register rows there too).
GPU_TEST_CASE("rmsnorm backward in place (dx over dy) keeps dgain the reference's", "[rmsnorm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (const int64_t dim : {int64_t(200), int64_t(5000)}) {
      INFO(ctx.kernel_family() << " dim " << dim);
      check_backward_with_gain(ctx, 3, dim, 41, /*in_place=*/true);
    }
  }
}

// dgain's grid has a workgroup per 64 columns of 4-wide loads: a row of 2^22 columns is 16,384 of
// them (it was refused as if each took one column: 65,536 past 65535).
GPU_TEST_CASE("rmsnorm dgain over rows of 2^22 columns in 4-wide loads", "[rmsnorm][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_family());
    check_backward_with_gain(ctx, 1, int64_t(1) << 22, 51, /*in_place=*/false);
  }
}

// The bytes a forward declares (the profile's and the bench's roofline) are those it must move:
// x read and y written once, the gain read once, rstd written. The generic kernel reads a row twice, the second time
// from cache; counting both put it over 100 % of copy bandwidth.
GPU_TEST_CASE("rmsnorm forward declares the bytes it must move, with either kernel", "[rmsnorm][gpu]") {
  auto ctx = rill_test::make_context();
  REQUIRE(ctx.device().caps.timestamps);  // lavapipe and the GPUs rill runs on have them
  // 300 columns: the register kernel; 8191: past it, the generic kernel.
  for (const uint32_t dim : {300u, 8191u}) {
    INFO("dim " << dim);
    const uint32_t rows = 41;  // several workgroups of the register kernel (it counted the gain per workgroup)
    auto x = ctx.tensor(rill::DType::kF32, {rows, dim}).value();
    auto y = ctx.tensor(rill::DType::kF32, {rows, dim}).value();
    auto g = ctx.tensor(rill::DType::kF32, {dim}).value();
    auto rstd = ctx.tensor(rill::DType::kF32, {rows}).value();
    auto seq = ctx.sequence({.timestamps = true}).value();
    REQUIRE(rill::ops::rmsnorm_forward(seq, x, &g, y, rstd).is_ok());
    REQUIRE(seq.run().is_ok());
    const auto timings = seq.timings().value();
    REQUIRE(timings.size() == 1);
    CHECK(timings[0].bytes == 2ull * rows * dim * 4 + dim * 4ull + 4ull * rows);
  }
}
