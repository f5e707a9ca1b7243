// Packed weight matrices (f16 pairs, int8 with group scales): the host packing against its
// definition, and matmul with a packed B (and the embedding gather from a packed table) against the
// double-precision reference on the values the packing keeps, over odd shapes, groups, batches,
// f32 and f16 activations and both kernel families.
#include <cmath>
#include <tuple>

#include "elementwise.hpp"
#include "matmul.hpp"
#include "op_test.hpp"
#include "rill/half.hpp"
#include "rill/ops/matmul.hpp"

namespace {

using rill::DType;
using rill::ops::WeightFormat;

rill::ops::HostPackedWeights pack(const std::vector<float>& v, std::vector<int64_t> shape, WeightFormat f,
                                  uint32_t group = 64) {
  auto p = rill::ops::pack_weights(v, shape, f, group);
  INFO(p.status().to_string());
  REQUIRE(p.is_ok());
  return std::move(p).value();
}

std::vector<float> unpacked(const rill::ops::HostPackedWeights& p) {
  std::vector<float> out;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.cols; ++c) out.push_back(p.value(b, r, c));
  return out;
}

struct Case {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool a_batched = true, transpose_a = false, bias = false, accumulate = false;
  uint32_t group = 64;
};

void check_case(rill::Context& ctx, DType dtype, WeightFormat format, const Case& t, uint32_t seed) {
  INFO("batch " << t.batch << " M " << t.m << " N " << t.n << " K " << t.k << " group " << t.group << " tA "
                << t.transpose_a << " bias " << t.bias << " acc " << t.accumulate << " f16 " << (dtype == DType::kF16)
                << " format " << rill::ops::weight_format_name(format) << " seed " << seed);
  const int64_t ba = t.a_batched ? t.batch : 1;
  const auto a = rill_test::stored(rill_test::random_vector(size_t(ba * t.m * t.k), seed), dtype);
  const auto w = rill_test::random_vector(size_t(t.batch * t.k * t.n), seed + 1);
  const auto bias =
      t.bias ? rill_test::stored(rill_test::random_vector(size_t(t.n), seed + 2), dtype) : std::vector<float>{};
  const auto host = pack(w, {t.batch, t.k, t.n}, format, t.group);
  auto c_ref = rill_test::stored(rill_test::random_vector(size_t(t.batch * t.m * t.n), seed + 3), dtype);
  const auto c_init = c_ref;
  rill::ref::matmul(
      a, unpacked(host), bias,
      {.batch = t.batch, .m = t.m, .n = t.n, .k = t.k, .a_batched = t.a_batched, .transpose_a = t.transpose_a},
      t.accumulate, c_ref);

  std::vector<int64_t> a_shape = t.transpose_a ? std::vector<int64_t>{t.k, t.m} : std::vector<int64_t>{t.m, t.k};
  if (t.a_batched) a_shape.insert(a_shape.begin(), t.batch);
  auto ta = rill_test::tensor_from(ctx, dtype, a_shape, a, "A");
  auto tc = rill_test::tensor_from(ctx, dtype, {t.batch, t.m, t.n}, c_init, "C");
  auto packed = rill::ops::upload_packed(ctx, host, "B");
  REQUIRE(packed.is_ok());
  rill::Tensor tbias;
  if (t.bias) tbias = rill_test::tensor_from(ctx, dtype, {t.n}, bias, "bias");
  auto seq = ctx.sequence();
  const rill::Status st =
      rill::ops::matmul(*seq, ta, *packed, tc,
                        {.transpose_a = t.transpose_a, .accumulate = t.accumulate, .bias = t.bias ? &tbias : nullptr});
  INFO(st.to_string());
  REQUIRE(st.is_ok());
  REQUIRE(seq->run().is_ok());
  // f32 sums of exactly representable products: the reference's tolerance for plain matmul.
  const double atol = dtype == DType::kF16 ? 2e-3 * (1.0 + t.k / 64.0) : 1e-6 * (4.0 + t.k);
  rill_test::require_close(rill_test::read(ctx, tc), c_ref, atol * (t.accumulate ? 2 : 1),
                           dtype == DType::kF16 ? 2e-3 : 1e-5, "C");
}

}  // namespace

TEST_CASE("pack_weights keeps int8 and int4 within half a step of each group's scale", "[packed_weights]") {
  const int64_t rows = 70, cols = 9;
  auto w = rill_test::random_vector(size_t(rows * cols), 7, -3.0f, 3.0f);
  w[5 * cols + 2] = 40.0f;                                          // an outlier widens its own group's scale only
  for (int64_t r = 0; r < 64; ++r) w[size_t(r * cols + 4)] = 0.0f;  // an all-zero group and column
  for (auto [format, q_max, per_word] :
       {std::tuple{WeightFormat::kInt8, 127.0, 4}, std::tuple{WeightFormat::kInt4, 7.0, 8}}) {
    INFO(rill::ops::weight_format_name(format));
    const auto p = pack(w, {rows, cols}, format, 32);
    REQUIRE(p.group == 32);
    REQUIRE(p.groups() == 3);
    const uint32_t wpr = uint32_t((cols + per_word - 1) / per_word);  // int8: 3 words a row, int4: 2
    REQUIRE(p.words_per_row() == wpr);
    REQUIRE(p.scales.size() == size_t(3 * cols));
    for (uint32_t g = 0; g < p.groups(); ++g)
      for (int64_t c = 0; c < cols; ++c) {
        double max_abs = 0.0;
        for (int64_t r = g * 32; r < std::min<int64_t>(rows, (g + 1) * 32); ++r)
          max_abs = std::max(max_abs, std::fabs(double(w[size_t(r * cols + c)])));
        const float scale = p.scales[size_t(g * cols + c)];
        CHECK(scale == float(max_abs / q_max));
        for (int64_t r = g * 32; r < std::min<int64_t>(rows, (g + 1) * 32); ++r) {
          const float v = p.value(0, r, c);
          CHECK(std::fabs(double(v) - w[size_t(r * cols + c)]) <= 0.5 * scale * (1 + 1e-6));
          CHECK(v == (scale == 0.0f ? 0.0f : float(std::nearbyint(double(w[size_t(r * cols + c)]) / scale)) * scale));
        }
      }
    CHECK(p.value(0, 5, 2) == 40.0f);  // the group's largest magnitude is exact
    CHECK(p.value(0, 10, 4) == 0.0f);  // zero group: scale 0, values 0
    // The ragged last word holds one column (the ninth): its other bits are zero.
    CHECK(p.words[size_t(wpr - 1)] >> (32 / per_word) == 0u);
    // group 0: one scale per column over all rows; a group above the rows is clamped.
    CHECK(pack(w, {rows, cols}, format, 0).groups() == 1);
    CHECK(pack(w, {rows, cols}, format, 1000).group == uint32_t(rows));
  }
}

TEST_CASE("pack_weights keeps f16 exactly as half precision rounds", "[packed_weights]") {
  auto w = rill_test::random_vector(2 * 5 * 3, 3, -65000.0f, 65000.0f);
  w[1] = 1e-8f;  // a subnormal half
  const auto p = pack(w, {2, 5, 3}, WeightFormat::kF16);
  REQUIRE(p.words_per_row() == 2);
  REQUIRE(p.scales.empty());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < 3; ++c) {
        const float want = rill::half_to_float(rill::float_to_half(w[size_t((b * 5 + r) * 3 + c)]));
        CHECK(p.value(b, r, c) == want);
      }
}

TEST_CASE("pack_weights refuses bad shapes, counts and non-finite values", "[packed_weights]") {
  using rill::StatusCode;
  const std::vector<float> v(12, 1.0f);
  CHECK(rill::ops::pack_weights(v, {12}, WeightFormat::kInt8).status().code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::pack_weights(v, {3, 5}, WeightFormat::kInt8).status().code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::pack_weights(v, {0, 12}, WeightFormat::kF16).status().code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::pack_weights(v, {1, 1, 2, 6}, WeightFormat::kF16).status().code() == StatusCode::kInvalidArgument);
  std::vector<float> bad = v;
  bad[7] = NAN;
  const auto s = rill::ops::pack_weights(bad, {3, 4}, WeightFormat::kInt8).status();
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("value 7") != std::string::npos);
  bad[7] = 70000.0f;  // finite, but past the largest half
  CHECK(rill::ops::pack_weights(bad, {3, 4}, WeightFormat::kF16).status().code() == StatusCode::kOutOfRange);
  CHECK(rill::ops::pack_weights(bad, {3, 4}, WeightFormat::kInt8).is_ok());
  CHECK(rill::ops::pack_weights(bad, {3, 4}, WeightFormat::kInt4).is_ok());
  CHECK(rill::ops::pack_weights(v, {3, 4}, WeightFormat::kInt8).is_ok());
  bad[7] = INFINITY;
  CHECK(rill::ops::pack_weights(bad, {3, 4}, WeightFormat::kInt4).status().code() == StatusCode::kInvalidArgument);
}

GPU_TEST_CASE("matmul with packed B matches the reference over odd shapes and groups",
              "[packed_weights][matmul][gpu]") {
  uint32_t seed = 1;
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (WeightFormat format : {WeightFormat::kInt8, WeightFormat::kInt4, WeightFormat::kF16}) {
        for (int64_t m : {1, 4, 7, 65}) {  // 1-4 rows: the matvec kernel
          for (int64_t n : {1, 5, 34, 100}) {
            for (int64_t k : {1, 17, 130}) {
              check_case(ctx, dtype, format, {.m = m, .n = n, .k = k, .group = uint32_t(k % 3 == 0 ? 0 : 16)}, ++seed);
            }
          }
        }
      }
    }
  }
}

// A decoding step's long K (CPU drivers count loops): f16 weights of K = 32768 on the matvec kernel
// (refused before, its scale-less loop counted twice), and int8 past the matvec's loop limit on the
// tiled kernels (refused before instead of falling back).
GPU_TEST_CASE("matmul with packed B takes a decoding step's long K", "[packed_weights][matmul][gpu]") {
  auto ctx = rill_test::make_context();
  check_case(ctx, DType::kF32, WeightFormat::kF16, {.m = 1, .n = 8, .k = 32768}, 91);
  check_case(ctx, DType::kF32, WeightFormat::kInt8, {.m = 2, .n = 8, .k = 60032, .group = 64}, 92);
}

GPU_TEST_CASE("matmul with packed B batches, broadcasts A, transposes A, adds bias and accumulates",
              "[packed_weights][matmul][gpu]") {
  uint32_t seed = 900;
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    for (DType dtype : rill_test::float_dtypes(ctx)) {
      for (WeightFormat format : {WeightFormat::kInt8, WeightFormat::kInt4, WeightFormat::kF16}) {
        check_case(ctx, dtype, format, {.batch = 3, .m = 20, .n = 9, .k = 66, .group = 8}, ++seed);
        check_case(
            ctx, dtype, format,
            {.batch = 3, .m = 3, .n = 9, .k = 66, .a_batched = false, .bias = true, .accumulate = true, .group = 8},
            ++seed);
        check_case(ctx, dtype, format, {.batch = 4, .m = 33, .n = 12, .k = 40, .a_batched = false, .group = 16},
                   ++seed);
        check_case(ctx, dtype, format,
                   {.m = 37, .n = 70, .k = 29, .transpose_a = true, .bias = true, .accumulate = true}, ++seed);
        check_case(ctx, dtype, format, {.m = 2, .n = 257, .k = 200, .bias = true, .group = 1}, ++seed);
      }
    }
  }
}

// The kernel a packed matmul of M x N x K (one matrix, f32) dispatches.
std::string packed_kernel_of(rill::Context& ctx, WeightFormat format, int64_t m, int64_t n, int64_t k, uint32_t group) {
  const auto host = pack(rill_test::random_vector(size_t(k * n), 5), {k, n}, format, group);
  auto b = rill::ops::upload_packed(ctx, host, "B");
  REQUIRE(b.is_ok());
  auto a = rill_test::empty_tensor(ctx, DType::kF32, {m, k});
  auto c = rill_test::empty_tensor(ctx, DType::kF32, {m, n});
  return rill_test::kernel_of(ctx, [&](rill::Sequence& seq) { return rill::ops::matmul(seq, a, *b, c); });
}

// The CPU-driver matmul's texel form with a packed B (matmul_register.glsl: the words as texels of
// 4, a lane's columns whole texels of words, half of one or (int4) one word of one, int8's and
// int4's scales per block of 4 subgroups of k steps): odd M, lanes past the last column, one to
// three k blocks, groups of one k block and of all rows, a lane's 8 f16 columns (a whole texel) and
// 4 (half of one, both halves), its 8 int4 columns (each of a texel's four words), folded
// batches with A shared, bias and accumulation, f32 and f16 activations. The dispatch must be the
// texel kernel where the device backs the texels (a limit profile may not: the storage-buffer
// kernel then takes the same shapes), a group that splits a k block and the plan's "off" leave it.
GPU_TEST_CASE("the CPU matmul's texel form reads packed B", "[packed_weights][matmul][gpu]") {
  uint32_t seed = 1700;
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  rill::Context ctx = rill_test::make_context(options);
  const rill::DeviceCaps& caps = ctx.device().caps;
  const uint32_t k_block = 4 * caps.subgroup_size;
  // A lane's 64 / subgroup columns: 8 or more int8 values, 4 or more f16 ones.
  const bool texels = caps.texel_buffer_u32x4 && caps.texel_buffer_f32x4;
  CHECK(packed_kernel_of(ctx, WeightFormat::kInt8, 65, 144, 2 * k_block, k_block) ==
        (texels && caps.subgroup_size <= 8 ? "matmul/matmul_tx_q8_f32" : "matmul/matmul_q8_f32"));
  CHECK(packed_kernel_of(ctx, WeightFormat::kF16, 65, 48, 2 * k_block, 0) ==
        (texels && caps.subgroup_size <= 16 ? "matmul/matmul_tx_w16_f32" : "matmul/matmul_w16_f32"));
  CHECK(packed_kernel_of(ctx, WeightFormat::kInt8, 65, 144, 2 * k_block, k_block / 2) == "matmul/matmul_q8_f32");
  // int4's texel form: a lane's 8 columns are one word of a texel (N a multiple of 32 columns).
  CHECK(packed_kernel_of(ctx, WeightFormat::kInt4, 65, 160, 2 * k_block, k_block) ==
        (texels && caps.subgroup_size <= 8 ? "matmul/matmul_tx_q4_f32" : "matmul/matmul_q4_f32"));
  CHECK(packed_kernel_of(ctx, WeightFormat::kInt4, 65, 144, 2 * k_block, k_block) == "matmul/matmul_q4_f32");
  const int64_t k = k_block;
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    check_case(ctx, dtype, WeightFormat::kInt8, {.m = 65, .n = 144, .k = 2 * k, .group = k_block}, ++seed);
    check_case(ctx, dtype, WeightFormat::kInt8, {.m = 7, .n = 32, .k = 3 * k, .bias = true, .group = 0}, ++seed);
    check_case(ctx, dtype, WeightFormat::kF16, {.m = 65, .n = 40, .k = 3 * k, .accumulate = true}, ++seed);
    check_case(ctx, dtype, WeightFormat::kF16, {.m = 9, .n = 24, .k = k, .bias = true}, ++seed);
    check_case(ctx, dtype, WeightFormat::kInt4, {.m = 65, .n = 160, .k = 2 * k, .group = k_block}, ++seed);
    check_case(ctx, dtype, WeightFormat::kInt4, {.m = 7, .n = 32, .k = 3 * k, .bias = true, .group = 0}, ++seed);
  }
  check_case(ctx, DType::kF32, WeightFormat::kInt4,
             {.batch = 3, .m = 20, .n = 32, .k = 2 * k, .a_batched = false, .accumulate = true, .group = k_block},
             ++seed);
  check_case(ctx, DType::kF32, WeightFormat::kInt8,
             {.batch = 3, .m = 20, .n = 16, .k = 2 * k, .a_batched = false, .accumulate = true, .group = k_block},
             ++seed);
  check_case(ctx, DType::kF32, WeightFormat::kF16, {.batch = 3, .m = 20, .n = 8, .k = k, .a_batched = false}, ++seed);
  options.kernel_plan = "matmul_texel=off";
  rill::Context off = rill_test::make_context(options);
  CHECK(packed_kernel_of(off, WeightFormat::kInt8, 65, 144, 2 * k_block, k_block) == "matmul/matmul_q8_f32");
}

GPU_TEST_CASE("matmul refuses a packed B that does not fit A and C", "[packed_weights][matmul][gpu]") {
  auto ctx = rill_test::make_context();
  const auto w = rill_test::random_vector(8 * 5, 1);
  auto b = rill::ops::upload_packed(ctx, pack(w, {8, 5}, WeightFormat::kInt8), "B");
  REQUIRE(b.is_ok());
  auto a = rill_test::empty_tensor(ctx, DType::kF32, {4, 8});
  auto a_wrong = rill_test::empty_tensor(ctx, DType::kF32, {4, 7});
  auto c = rill_test::empty_tensor(ctx, DType::kF32, {4, 5});
  auto c_half = rill_test::empty_tensor(ctx, DType::kF16, {4, 5});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  CHECK(rill::ops::matmul(*seq, a_wrong, *b, c).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, *b, c_half).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, *b, c, {.transpose_b = true}).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::matmul(*seq, a, rill::ops::PackedWeights{}, c).code() == StatusCode::kInvalidArgument);
  auto no_scales = rill::ops::upload_packed(ctx, pack(w, {8, 5}, WeightFormat::kInt8), "B");
  REQUIRE(no_scales.is_ok());
  no_scales->scales = rill::Tensor{};
  CHECK(rill::ops::matmul(*seq, a, *no_scales, c).code() == StatusCode::kInvalidArgument);
  auto too_wide = rill::ops::upload_packed(ctx, pack(w, {8, 5}, WeightFormat::kInt8), "B");
  REQUIRE(too_wide.is_ok());
  too_wide->cols = 9;  // 3 words per row, but the tensor holds 2: refused, not read past its end
  auto c9 = rill_test::empty_tensor(ctx, DType::kF32, {4, 9});
  CHECK(rill::ops::matmul(*seq, a, *too_wide, c9).code() == StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
  CHECK(rill::ops::matmul(*seq, a, *b, c).is_ok());

  using rill::ops::HostPackedWeights;
  // Host matrices built by hand: a group of 0 rows (a default HostPackedWeights' own) and shapes
  // below 1 are refused before any division by the group.
  HostPackedWeights hand = pack(w, {8, 5}, WeightFormat::kInt8);
  for (const auto& [what, broken] : std::vector<std::pair<const char*, std::function<void(HostPackedWeights&)>>>{
           {"group 0", [](HostPackedWeights& h) { h.group = 0; }},
           {"no rows", [](HostPackedWeights& h) { h.rows = 0; }},
           {"negative columns", [](HostPackedWeights& h) { h.cols = -5; }}}) {
    INFO(what);
    HostPackedWeights h = hand;
    broken(h);
    CHECK(rill::ops::upload_packed(ctx, h, "B").status().code() == StatusCode::kInvalidArgument);
    CHECK(rill::ops::packed_columns(h, 0, 4).status().code() == StatusCode::kInvalidArgument);
    CHECK(rill::ops::upload_packed_columns(ctx, h, "B", 64).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(rill::ops::upload_packed(ctx, HostPackedWeights{}, "B").status().code() == StatusCode::kInvalidArgument);
}

GPU_TEST_CASE("embedding from a packed transposed table gathers the packed values and counts bad ids",
              "[packed_weights][elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    for (WeightFormat format : {WeightFormat::kInt8, WeightFormat::kInt4, WeightFormat::kF16}) {
      for (auto [vocab, dim] : {std::pair<int64_t, int64_t>{13, 7}, {5, 1}, {301, 70}}) {
        INFO("vocab " << vocab << " dim " << dim << " f16 " << (dtype == DType::kF16) << " "
                      << rill::ops::weight_format_name(format));
        const std::vector<uint32_t> ids = {3, 0, uint32_t(vocab - 1), 3, 99999, 2, 1u << 31};  // two out of range
        const auto table_t =
            pack(rill_test::random_vector(size_t(vocab * dim), uint32_t(vocab)), {dim, vocab}, format, 16);
        std::vector<float> table(size_t(vocab * dim));  // the packed values, row per token
        for (int64_t v = 0; v < vocab; ++v)
          for (int64_t d = 0; d < dim; ++d) table[size_t(v * dim + d)] = table_t.value(0, d, v);
        std::vector<float> out_ref;
        rill::ref::embedding_forward(ids, table, vocab, dim, out_ref);
        for (float& x : out_ref) x = rill_test::stored({x * 2.5f}, dtype)[0];
        auto tids = rill_test::empty_tensor(ctx, DType::kU32, {int64_t(ids.size())});
        REQUIRE(ctx.upload(tids, std::span(reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * 4)).is_ok());
        auto packed = rill::ops::upload_packed(ctx, table_t, "table");
        REQUIRE(packed.is_ok());
        auto tout = rill_test::empty_tensor(ctx, dtype, {int64_t(ids.size()), dim});
        auto terr = rill_test::empty_tensor(ctx, DType::kU32, {1});
        auto seq = ctx.sequence();
        REQUIRE(rill::ops::embedding_forward(*seq, tids, *packed, tout, terr, 2.5f).is_ok());
        REQUIRE(seq->run().is_ok());
        rill_test::require_close(rill_test::read(ctx, tout), out_ref, 0.0, dtype == DType::kF16 ? 1e-3 : 0.0, "rows");
        uint32_t count = 0;
        REQUIRE(ctx.download(terr, std::span(reinterpret_cast<uint8_t*>(&count), 4)).is_ok());
        CHECK(count == 2);
      }
    }
  }
}

TEST_CASE("packed_columns keeps its columns' words and scales and pads a ragged word", "[packed_weights]") {
  using rill::StatusCode;
  const auto values = rill_test::random_vector(7 * 29, 31);
  for (WeightFormat format : {WeightFormat::kInt8, WeightFormat::kInt4, WeightFormat::kF16}) {
    INFO(rill::ops::weight_format_name(format));
    const auto host = pack(values, {7, 29}, format, 3);
    const int64_t per = format == WeightFormat::kInt4 ? 8 : format == WeightFormat::kInt8 ? 4 : 2;
    for (auto [first, count] : {std::pair<int64_t, int64_t>{0, 29}, {per, 5}, {2 * per, 29 - 2 * per}, {0, 1}}) {
      INFO("columns " << first << " + " << count);
      auto part = rill::ops::packed_columns(host, first, count);
      REQUIRE(part.is_ok());
      // Packing the same columns' floats gives the same bits: int8 scales are per column and group.
      std::vector<float> sub;
      for (int64_t r = 0; r < 7; ++r)
        for (int64_t c = first; c < first + count; ++c) sub.push_back(values[size_t(r * 29 + c)]);
      const auto direct = pack(sub, {7, count}, format, 3);
      CHECK(part->words == direct.words);
      CHECK(part->scales == direct.scales);
      CHECK(part->group == direct.group);
    }
    CHECK(rill::ops::packed_columns(host, 1, 4).status().code() == StatusCode::kInvalidArgument);     // inside a word
    CHECK(rill::ops::packed_columns(host, per, 29).status().code() == StatusCode::kInvalidArgument);  // past the end
    CHECK(rill::ops::packed_columns(host, 0, 0).status().code() == StatusCode::kInvalidArgument);
    auto short_words = host;  // a hand-assembled matrix whose words do not match its shape
    short_words.words.pop_back();
    CHECK(rill::ops::packed_columns(short_words, 0, per).status().code() == StatusCode::kInvalidArgument);
    CHECK(rill::ops::packed_columns(pack(values, {1, 7, 29}, format), 0, 8).is_ok());
    CHECK(rill::ops::packed_columns(pack(values, {7, 1, 29}, format), 0, 8).status().code() ==
          StatusCode::kInvalidArgument);  // a batch of matrices
  }
}

// A packed table uploaded in column blocks of at most 4 KiB: the blocks tile the vocabulary at
// multiples of 64 columns, each within the limit, and the gather from them (a dispatch per block)
// equals the packed values, the bad ids zeroed and counted once.
GPU_TEST_CASE("embedding gathers from a packed table in column blocks", "[packed_weights][elementwise][gpu]") {
  auto ctx = rill_test::make_context();
  const int64_t vocab = 1000, dim = 24;
  for (DType dtype : rill_test::float_dtypes(ctx)) {
    for (WeightFormat format : {WeightFormat::kInt8, WeightFormat::kInt4, WeightFormat::kF16}) {
      INFO(rill::ops::weight_format_name(format) << " f16 " << (dtype == DType::kF16));
      const auto table_t = pack(rill_test::random_vector(size_t(vocab * dim), 12), {dim, vocab}, format, 16);
      auto blocks = rill::ops::upload_packed_columns(ctx, table_t, "table", 4096, 64);
      INFO(blocks.status().to_string());
      REQUIRE(blocks.is_ok());
      // int4: 12 bytes of words per column, blocks of 320; int8: 24 bytes, blocks of 128; f16: 48
      // bytes, blocks of 64.
      const int64_t per_block = format == WeightFormat::kInt4 ? 320 : format == WeightFormat::kInt8 ? 128 : 64;
      REQUIRE(blocks->blocks.size() == size_t((vocab + per_block - 1) / per_block));
      for (size_t b = 0; b < blocks->blocks.size(); ++b) {
        CHECK(blocks->first[b] == int64_t(b) * per_block);
        CHECK(blocks->blocks[b].cols == std::min(per_block, vocab - int64_t(b) * per_block));
        CHECK(blocks->blocks[b].words.size_bytes() <= 4096);
        CHECK(blocks->blocks[b].scales.size_bytes() <= 4096);
      }
      CHECK(blocks->size_bytes() >= table_t.words.size() * 4);
      std::vector<uint32_t> ids = {0, 999, 5000, uint32_t(per_block - 1), uint32_t(per_block), 3, 1u << 31};
      for (int64_t edge = 2 * per_block; edge < vocab; edge += 3 * per_block)
        ids.insert(ids.end(), {uint32_t(edge - 1), uint32_t(edge)});
      std::vector<float> out_ref;
      for (uint32_t id : ids)
        for (int64_t d = 0; d < dim; ++d)
          out_ref.push_back(id < vocab ? rill_test::stored({table_t.value(0, d, id) * 0.5f}, dtype)[0] : 0.0f);
      auto tids = rill_test::empty_tensor(ctx, DType::kU32, {int64_t(ids.size())});
      REQUIRE(ctx.upload(tids, std::span(reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * 4)).is_ok());
      auto tout = rill_test::empty_tensor(ctx, dtype, {int64_t(ids.size()), dim});
      auto terr = rill_test::empty_tensor(ctx, DType::kU32, {1});
      auto seq = ctx.sequence();
      REQUIRE(rill::ops::embedding_forward(*seq, tids, *blocks, tout, terr, 0.5f).is_ok());
      REQUIRE(seq->run().is_ok());
      rill_test::require_close(rill_test::read(ctx, tout), out_ref, 0.0, dtype == DType::kF16 ? 1e-3 : 0.0, "rows");
      uint32_t count = 0;
      REQUIRE(ctx.download(terr, std::span(reinterpret_cast<uint8_t*>(&count), 4)).is_ok());
      CHECK(count == 2);
    }
  }
  const auto table_t = pack(rill_test::random_vector(size_t(vocab * dim), 13), {dim, vocab}, WeightFormat::kF16);
  auto whole = rill::ops::upload_packed_columns(ctx, table_t, "table");  // the device's limit: one block
  REQUIRE(whole.is_ok());
  CHECK(whole->blocks.size() == 1);
  CHECK(rill::ops::upload_packed_columns(ctx, table_t, "table", 1000, 64).status().code() ==
        rill::StatusCode::kOutOfRange);  // 64 columns take 3 KB
  // Every block's bindings within the bound, where a row's words do not split evenly: int4 rows of
  // 2049 (a column's 1024.5 words rounded down gave 65,568-byte blocks under 65,536), and f16 with a
  // ragged last word (1000 x 3 whole is 8,000 bytes, over 6,000).
  for (const auto& [rows, cols, format, max] :
       {std::tuple{int64_t(2049), int64_t(128), WeightFormat::kInt4, uint64_t(65536)},
        std::tuple{int64_t(1000), int64_t(3), WeightFormat::kF16, uint64_t(6000)}}) {
    const auto host = pack(rill_test::random_vector(size_t(rows * cols), 17), {rows, cols}, format, 0);
    auto blocks = rill::ops::upload_packed_columns(ctx, host, "bounded", max, 1);
    REQUIRE(blocks.is_ok());
    CHECK(blocks->blocks.size() > 1);
    for (const auto& b : blocks->blocks) {
      CHECK(b.words.size_bytes() <= max);
      if (rill::ops::has_scales(format)) CHECK(b.scales.size_bytes() <= max);
    }
  }
  // Blocks that do not tile the table in order are refused before anything is recorded.
  auto split = rill::ops::upload_packed_columns(ctx, table_t, "table", 4096, 64);
  REQUIRE(split.is_ok());
  std::swap(split->first[0], split->first[1]);
  auto tids = rill_test::empty_tensor(ctx, DType::kU32, {1});
  auto tout = rill_test::empty_tensor(ctx, DType::kF32, {1, dim});
  auto terr = rill_test::empty_tensor(ctx, DType::kU32, {1});
  auto seq = ctx.sequence();
  CHECK(rill::ops::embedding_forward(*seq, tids, *split, tout, terr).code() == rill::StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
}
