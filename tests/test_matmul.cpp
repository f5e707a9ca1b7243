// Matmul against the double-precision reference: odd shapes, every transpose, bias, accumulation,
// batches with broadcast, f32 and f16 storage, both kernel families (register and shared-memory).
#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>

#include "matmul.hpp"
#include "op_test.hpp"
#include "rill/ops/matmul.hpp"

namespace {

using rill::DType;

// Declared tolerances: f32 error grows with the reduction length K; f16 adds one output rounding.
double atol_for(DType dtype, int64_t k) { return dtype == DType::kF16 ? 2e-3 * (1.0 + k / 64.0) : 1e-6 * (4.0 + k); }
double rtol_for(DType dtype) { return dtype == DType::kF16 ? 2e-3 : 1e-5; }

void check_case(rill::Context& ctx, DType dtype, const rill::ref::MatmulShape& s, bool with_bias, bool accumulate,
                uint32_t seed) {
  INFO("batch " << s.batch << " M " << s.m << " N " << s.n << " K " << s.k << " tA " << s.transpose_a << " tB "
                << s.transpose_b << " bias " << with_bias << " acc " << accumulate << " f16 " << (dtype == DType::kF16)
                << " seed " << seed);
  const int64_t ba = s.a_batched ? s.batch : 1, bb = s.b_batched ? s.batch : 1;
  const auto a = rill_test::stored(rill_test::random_vector(size_t(ba * s.m * s.k), seed), dtype);
  const auto b = rill_test::stored(rill_test::random_vector(size_t(bb * s.k * s.n), seed + 1), dtype);
  const auto bias = with_bias ? rill_test::stored(rill_test::random_vector(size_t(s.n), seed + 2), dtype) : std::vector<float>{};
  auto c_ref = rill_test::stored(rill_test::random_vector(size_t(s.batch * s.m * s.n), seed + 3), dtype);
  const auto c_init = c_ref;
  rill::ref::matmul(a, b, bias, s, accumulate, c_ref);

  std::vector<int64_t> a_shape = s.transpose_a ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k};
  std::vector<int64_t> b_shape = s.transpose_b ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n};
  if (s.a_batched) a_shape.insert(a_shape.begin(), s.batch);
  if (s.b_batched) b_shape.insert(b_shape.begin(), s.batch);
  auto ta = rill_test::tensor_from(ctx, dtype, a_shape, a, "A");
  auto tb = rill_test::tensor_from(ctx, dtype, b_shape, b, "B");
  auto tc = rill_test::tensor_from(ctx, dtype, {s.batch, s.m, s.n}, c_init, "C");
  rill::Tensor tbias;
  if (with_bias) tbias = rill_test::tensor_from(ctx, dtype, {s.n}, bias, "bias");
  auto seq = ctx.sequence();
  const rill::Status st = rill::ops::matmul(*seq, ta, tb, tc,
                                            {.transpose_a = s.transpose_a, .transpose_b = s.transpose_b,
                                             .accumulate = accumulate, .bias = with_bias ? &tbias : nullptr});
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  REQUIRE(seq->run().is_ok());
  rill_test::require_close(rill_test::read(ctx, tc), c_ref, atol_for(dtype, s.k) * (accumulate ? 2 : 1), rtol_for(dtype), "C");
}

}  // namespace

GPU_TEST_CASE("matmul matches the reference over odd shapes and every transpose", "[matmul][gpu]") {
  uint32_t seed = 1;
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (int64_t m : {1, 7, 64, 65}) {
        for (int64_t n : {1, 33, 100}) {
          for (int64_t k : {1, 17, 130}) {
            for (int t = 0; t < 4; ++t) {
              rill::ref::MatmulShape s{.batch = 1, .m = m, .n = n, .k = k, .transpose_a = (t & 1) != 0,
                                       .transpose_b = (t & 2) != 0};
              check_case(ctx, dtype, s, false, false, ++seed);
            }
          }
        }
      }
    }
  }
}

GPU_TEST_CASE("matmul adds bias, accumulates, and batches with broadcast", "[matmul][gpu]") {
  uint32_t seed = 500;
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      check_case(ctx, dtype, {.batch = 1, .m = 37, .n = 70, .k = 29}, true, false, ++seed);
      check_case(ctx, dtype, {.batch = 1, .m = 37, .n = 70, .k = 29, .transpose_b = true}, true, true, ++seed);
      check_case(ctx, dtype, {.batch = 3, .m = 20, .n = 9, .k = 66}, false, false, ++seed);
      check_case(ctx, dtype, {.batch = 4, .m = 20, .n = 9, .k = 66, .b_batched = false}, true, false, ++seed);
      check_case(ctx, dtype, {.batch = 2, .m = 5, .n = 64, .k = 8, .a_batched = false, .transpose_a = true}, false,
                 true, ++seed);
      // A shared by every batch (the CPU drivers' kernel folds the batches into one wide C): narrow
      // and odd N, a partial last k block, every transpose.
      for (int t = 0; t < 4; ++t)
        check_case(ctx, dtype,
                   {.batch = 3,
                    .m = 70,
                    .n = t < 2 ? 33 : 7,
                    .k = 130,
                    .a_batched = false,
                    .transpose_a = (t & 1) != 0,
                    .transpose_b = (t & 2) != 0},
                   t == 1, t == 2, ++seed);
    }
  }
}

GPU_TEST_CASE("matmul rejects mismatched shapes and dtypes", "[matmul][gpu]") {
  auto ctx = rill_test::make_context();
  auto a = rill_test::empty_tensor(ctx, DType::kF32, {4, 8});
  auto b = rill_test::empty_tensor(ctx, DType::kF32, {8, 5});
  auto c = rill_test::empty_tensor(ctx, DType::kF32, {4, 5});
  auto c_wrong = rill_test::empty_tensor(ctx, DType::kF32, {5, 4});
  auto b_half = rill_test::empty_tensor(ctx, DType::kF16, {8, 5});
  auto vec = rill_test::empty_tensor(ctx, DType::kF32, {8});
  auto bias_wrong = rill_test::empty_tensor(ctx, DType::kF32, {4});
  auto batched = rill_test::empty_tensor(ctx, DType::kF32, {3, 4, 8});
  auto c2 = rill_test::empty_tensor(ctx, DType::kF32, {2, 4, 5});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  CHECK(rill::ops::matmul(*seq, a, b, c_wrong).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, b_half, c).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, vec, c).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, b, c, {.transpose_a = true}).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, b, c, {.bias = &bias_wrong}).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, batched, b, c2).code() == StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
  CHECK(rill::ops::matmul(*seq, a, b, c).is_ok());
}

GPU_TEST_CASE("matmul refuses an inner dimension a driver's loop limit would cut short", "[matmul][gpu]") {
  auto ctx = rill_test::make_context();
  auto a = rill_test::empty_tensor(ctx, DType::kF32, {2, 1100000});
  auto b = rill_test::empty_tensor(ctx, DType::kF32, {1100000, 2});
  auto c = rill_test::empty_tensor(ctx, DType::kF32, {2, 2});
  auto seq = ctx.sequence();
  const auto& quirks = ctx.device().quirks;
  const bool limited = std::find(quirks.begin(), quirks.end(), "lavapipe-loop-limit") != quirks.end();
  const rill::Status s = rill::ops::matmul(*seq, a, b, c);
  INFO(s.to_string());
  if (limited) {
    CHECK(s.code() == rill::StatusCode::kOutOfRange);
    CHECK(s.message().find("loop") != std::string::npos);
  } else {
    CHECK(s.is_ok());
  }
}

namespace {

// The GPU kernel under a forced plan, in both storage types: per shape every transpose, with bias
// (t 1, 3), accumulation (t 2, 3) and two batches, A and B batched (t 2) or A broadcast (t 3).
void check_forced_gpu_plan(const std::string& plan, std::initializer_list<std::array<int64_t, 3>> shapes,
                           uint32_t& seed) {
  INFO("kernel plan " << plan);
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "gpu";
  options.kernel_plan = plan;
  rill::Context ctx = rill_test::make_context(options);
  for (DType dtype : rill_test::float_dtypes(ctx))
    for (const auto& [m, n, k] : shapes)
      for (int t = 0; t < 4; ++t)
        check_case(ctx, dtype,
                   {.batch = t >= 2 ? 2 : 1,
                    .m = m,
                    .n = n,
                    .k = k,
                    .a_batched = t != 3,
                    .transpose_a = (t & 1) != 0,
                    .transpose_b = (t & 2) != 0},
                   t == 1 || t == 3, t == 2 || t == 3, ++seed);
}

}  // namespace

// The GPU kernel's accumulator tiles (the plan picks 8 x 8 only for products with hundreds of
// 128 x 128 blocks, which tests do not reach): each forced, over partial blocks, with the
// accumulators strided over the block and grouped in runs.
GPU_TEST_CASE("every accumulator tile of the GPU matmul matches the reference", "[matmul][gpu]") {
  uint32_t seed = 900;
  for (const char* layout : {"strided", "grouped"})
    for (const char* tile : {"2x2", "4x4", "8x4", "4x8", "8x8"})
      check_forced_gpu_plan(std::string("matmul_layout=") + layout + ",matmul_tile=" + tile,
                            {{129, 257, 17}, {7, 130, 33}, {200, 9, 130}}, seed);
}

// The GPU kernel split along K (the plan splits products of few blocks and a long K, which tests
// do not reach): forced, with shares of uneven length and more shares than slices of K (empty ones).
GPU_TEST_CASE("the GPU matmul split along K matches the reference", "[matmul][gpu]") {
  uint32_t seed = 1200;
  for (const char* splits : {"2", "3", "8"})
    check_forced_gpu_plan(std::string("matmul_splits=") + splits, {{70, 33, 200}, {5, 130, 17}, {64, 64, 64}}, seed);
}

// The GPU kernel's slices 8 and 32 k steps deep (the plan's 16 is in the tests above): K below,
// across and not a multiple of a slice, the deep slices also split along K and with 8 x 4 strided tiles.
GPU_TEST_CASE("the GPU matmul with shallower and deeper slices matches the reference", "[matmul][gpu]") {
  uint32_t seed = 1250;
  for (const char* plan : {"matmul_depth=8", "matmul_depth=32", "matmul_depth=32,matmul_splits=3",
                           "matmul_depth=32,matmul_tile=8x4,matmul_layout=strided"})
    check_forced_gpu_plan(plan, {{70, 33, 200}, {5, 130, 17}, {129, 65, 96}}, seed);
}

// The GPU kernel's two shared stages taken in turn: one slice, several and a partial last one, with
// the plan's tiles and 8 x 8 ones, strided and grouped, slices 8 and 32 deep, and split along K
// (shares of one slice and empty ones).
GPU_TEST_CASE("the GPU matmul with two shared stages matches the reference", "[matmul][gpu]") {
  uint32_t seed = 1300;
  for (const char* plan :
       {"matmul_buffers=2", "matmul_buffers=2,matmul_tile=8x8,matmul_layout=strided", "matmul_buffers=2,matmul_depth=8",
        "matmul_buffers=2,matmul_depth=32,matmul_splits=3", "matmul_buffers=2,matmul_splits=8"})
    check_forced_gpu_plan(plan, {{70, 33, 200}, {5, 130, 17}, {129, 65, 16}, {3, 4, 1}}, seed);
}

namespace {

// The kernel one matmul of this context dispatches (read from a timed sequence).
std::string kernel_of_matmul(rill::Context& ctx, int64_t m, int64_t n, int64_t k, DType dtype = DType::kF16) {
  auto a = ctx.tensor(dtype, {m, k});
  auto b = ctx.tensor(dtype, {k, n});
  auto c = ctx.tensor(dtype, {m, n});
  return rill_test::kernel_of(ctx, [&](rill::Sequence& seq) { return rill::ops::matmul(seq, *a, *b, *c); });
}

}  // namespace

// The CPU-driver matmul's texel form (f32 and f16 storage, A and B untransposed, K a multiple of 4
// subgroups, N of a lane's 8 columns; matmul_register.glsl): odd M, columns past the last tile, one
// to three k blocks, A batched or shared (folded batches) and B broadcast, with bias and
// accumulation; the dispatch must be the texel kernel where the device backs the texels and a lane's
// columns are whole texels (a limit profile may not back them, and a 32-lane subgroup leaves a lane
// 2 of the tile's 64 columns: the register kernel then takes the same shapes), and the plan's "off"
// leaves it. Cooperative matrices, which a GPU's f16 products take first, are off.
GPU_TEST_CASE("the CPU matmul's texel form matches the reference", "[matmul][gpu]") {
  uint32_t seed = 1400;
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  options.kernel_plan = "matmul_coop=off";
  rill::Context ctx = rill_test::make_context(options);
  const rill::DeviceCaps& caps = ctx.device().caps;
  const int64_t k_block = 4 * int64_t(caps.subgroup_size);
  const uint32_t lane_columns = 64 / std::max<uint32_t>(caps.subgroup_size, 4);  // the plan's tn
  const bool lane_texels = lane_columns % 4 == 0 && 200 % lane_columns == 0;
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    const bool f16 = dtype == DType::kF16;
    const std::string suffix = f16 ? "f16" : "f32";
    const bool texels = lane_texels && (f16 ? caps.texel_buffer_f16x4 : caps.texel_buffer_f32x4);
    CHECK(kernel_of_matmul(ctx, 65, 200, 2 * k_block, dtype) ==
          (texels ? "matmul/matmul_tx_" : "matmul/matmul_") + suffix);
  }
  // Few specializations (each is seconds of lavapipe compilation): per case t a shape, with bias
  // (t 1, 2), accumulation (t 2, 3), three batches (t > 0), A shared (t 2) or B broadcast (t 3);
  // f16 storage too in cases 0 and 2.
  const std::array<std::array<int64_t, 3>, 4> shapes = {{{65, 200, 2}, {7, 64, 3}, {130, 16, 1}, {65, 200, 2}}};
  for (int t = 0; t < 4; ++t) {
    const auto& [m, n, blocks] = shapes[size_t(t)];
    const rill::ref::MatmulShape s{
        .batch = t == 0 ? 1 : 3, .m = m, .n = n, .k = blocks * k_block, .a_batched = t != 2, .b_batched = t != 3};
    for (DType dtype : rill_test::float_dtypes(ctx))
      if (dtype == DType::kF32 || t % 2 == 0) check_case(ctx, dtype, s, t == 1 || t == 2, t == 2 || t == 3, ++seed);
  }
  options.kernel_plan = "matmul_coop=off,matmul_texel=off";
  rill::Context off = rill_test::make_context(options);
  CHECK(kernel_of_matmul(off, 65, 200, 2 * k_block, DType::kF32) == "matmul/matmul_f32");
}

// The cooperative-matrix kernel (f16, rows contiguous, K and N multiples of 8): natively where the
// device has cooperative matrices, and on every device with its fragments emulated, which checks
// the staging, the fragment offsets and the epilogue where no cooperative matrices exist (lavapipe).
GPU_TEST_CASE("the cooperative-matrix matmul matches the reference", "[matmul][gpu]") {
  // Each with one shared stage per k slice (the plan's choice) and with two, with 2 x 4 and 4 x 2
  // subgroups as well as the plan's 2 x 2, and with slices of 64 k steps as well as 32.
  std::vector<std::string> modes = {"emulated",
                                    "emulated,matmul_coop_buffers=2",
                                    "emulated,matmul_coop_groups=2x4",
                                    "emulated,matmul_coop_groups=4x2,matmul_coop_buffers=2",
                                    "emulated,matmul_coop_depth=64",
                                    "emulated,matmul_coop_depth=64,matmul_coop_groups=2x4,matmul_coop_buffers=2"};
  {
    const rill::Context probe = rill_test::make_context();
    if (probe.device().caps.cooperative_matrix_f16[0] != 0) {
      modes.push_back("native");
      modes.push_back("native,matmul_coop_buffers=2");
      modes.push_back("native,matmul_coop_groups=2x4");
      modes.push_back("native,matmul_coop_groups=4x2");
      modes.push_back("native,matmul_coop_depth=64");
      modes.push_back("native,matmul_coop_depth=64,matmul_coop_groups=2x4");
    } else {
      WARN(probe.device().name << " has no cooperative matrices: only their emulated fragments are tested");
    }
  }
  uint32_t seed = 1300;
  for (const std::string& plan : modes) {
    INFO("matmul_coop=" << plan);
    const std::string mode = plan.substr(0, plan.find(','));
    rill::ContextOptions options = rill_test::validated_options();
    options.kernel_plan = "matmul_coop=" + plan;
    rill::Context ctx = rill_test::make_context(options);
    if (!ctx.device().caps.storage_buffer_16bit) {
      WARN(ctx.device().name << " has no f16 storage: the cooperative-matrix matmul is not tested");
      continue;
    }
    CHECK(kernel_of_matmul(ctx, 70, 24, 40) ==
          (mode == "native" ? "matmul/matmul_coop_f16" : "matmul/matmul_coop_emulated_f16"));
    // Partial blocks in m and n, several k slices and a partial last one, one block exactly, a
    // single row; bias, accumulation, and batches of A with B broadcast and of both.
    for (const auto& [m, n, k] : {std::array<int64_t, 3>{130, 200, 96}, {65, 72, 40}, {64, 64, 32}, {1, 8, 8}})
      for (int variant = 0; variant < 4; ++variant)
        check_case(ctx, DType::kF16,
                   {.batch = variant >= 2 ? 3 : 1,
                    .m = m,
                    .n = n,
                    .k = k,
                    .a_batched = variant >= 2,
                    .b_batched = variant == 3},
                   variant == 1 || variant == 3, variant == 2 || variant == 3, ++seed);
    // Transposed operands, odd K or N, and f32 take the other kernels.
    CHECK(kernel_of_matmul(ctx, 70, 20, 40).find("coop") == std::string::npos);
    CHECK(kernel_of_matmul(ctx, 70, 24, 36).find("coop") == std::string::npos);
  }
}

GPU_TEST_CASE("cooperative matrices forced on a device without them are refused by name", "[matmul][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_plan = "matmul_coop=native";
  rill::Context ctx = rill_test::make_context(options);
  if (ctx.device().caps.cooperative_matrix_f16[0] != 0 || !ctx.device().caps.storage_buffer_16bit) {
    WARN(ctx.device().name << " has cooperative matrices or no f16 storage: nothing to refuse");
    return;
  }
  auto a = ctx.tensor(DType::kF16, {16, 16});
  auto c = ctx.tensor(DType::kF16, {16, 16});
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  const rill::Status st = rill::ops::matmul(*seq, *a, *a, *c);
  INFO(st.to_string());
  CHECK(st.code() == rill::StatusCode::kUnimplemented);
  CHECK(st.message().find("cooperative matrices") != std::string::npos);
}
