// Uploads and downloads (synchronous and recorded), copies, zero fills, f16 storage.
#include <cmath>

#include "gpu_test.hpp"
#include "vk/kernel_contracts.hpp"

GPU_TEST_CASE("f32 and f16 tensors round-trip through upload_floats/download_floats", "[transfer][gpu]") {
  auto ctx = rill_test::make_context();
  for (int64_t n : {1, 7, 63, 64, 65, 1000}) {
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = std::sin(0.37f * float(i)) * 100.0f;
    auto f32 = ctx.tensor(rill::DType::kF32, {n});
    auto f16 = ctx.tensor(rill::DType::kF16, {n});
    REQUIRE(f32.is_ok());
    REQUIRE(f16.is_ok());
    REQUIRE(ctx.upload_floats(*f32, values).is_ok());
    REQUIRE(ctx.upload_floats(*f16, values).is_ok());
    auto back32 = ctx.download_floats(*f32);
    auto back16 = ctx.download_floats(*f16);
    REQUIRE(back32.is_ok());
    REQUIRE(back16.is_ok());
    CHECK(back32.value() == values);
    for (size_t i = 0; i < values.size(); ++i)
      CHECK(back16.value()[i] == rill::half_to_float(rill::float_to_half(values[i])));
  }
}

GPU_TEST_CASE("wrong sizes, dtypes and foreign tensors are rejected", "[transfer][gpu]") {
  auto ctx = rill_test::make_context();
  auto other = rill_test::make_context();
  auto t = ctx.tensor(rill::DType::kF32, {10}, "t");
  auto u = ctx.tensor(rill::DType::kI32, {10}, "u");
  auto foreign = other.tensor(rill::DType::kF32, {10}, "foreign");
  REQUIRE(t.is_ok());
  REQUIRE(u.is_ok());
  REQUIRE(foreign.is_ok());
  std::vector<uint8_t> bytes(39);
  CHECK(ctx.upload(*t, bytes).code() == rill::StatusCode::kInvalidArgument);
  CHECK(ctx.download(*t, bytes).code() == rill::StatusCode::kInvalidArgument);
  CHECK(ctx.upload_floats(*t, std::vector<float>(9)).code() == rill::StatusCode::kInvalidArgument);
  CHECK(ctx.upload_floats(*u, std::vector<float>(10)).code() == rill::StatusCode::kInvalidArgument);
  const rill::Status s = ctx.upload_floats(*foreign, std::vector<float>(10));
  CHECK(s.code() == rill::StatusCode::kInvalidArgument);
  CHECK(s.message().find("another context") != std::string::npos);
  CHECK(ctx.download_floats(rill::Tensor()).status().code() == rill::StatusCode::kInvalidArgument);
}

GPU_TEST_CASE("recorded upload, copy, zero fill and download run in order", "[transfer][gpu]") {
  auto ctx = rill_test::make_context();
  const int64_t n = 1001;  // odd: zero fill rounds to whole words inside the padding
  auto a = ctx.tensor(rill::DType::kF16, {n});
  auto b = ctx.tensor(rill::DType::kF16, {n});
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  std::vector<uint16_t> halves(static_cast<size_t>(n));
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = rill::float_to_half(float(i));
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  REQUIRE(seq->upload(*a, {reinterpret_cast<const uint8_t*>(halves.data()), halves.size() * 2}).is_ok());
  REQUIRE(seq->copy(*a, *b).is_ok());
  auto after_copy = seq->download(*b);
  REQUIRE(after_copy.is_ok());
  REQUIRE(seq->fill_zero(*a).is_ok());
  auto after_zero = seq->download(*a);
  REQUIRE(after_zero.is_ok());
  REQUIRE(seq->run().is_ok());
  auto copied = seq->read_floats(*after_copy);
  auto zeroed = seq->read_floats(*after_zero);
  REQUIRE(copied.is_ok());
  REQUIRE(zeroed.is_ok());
  for (int64_t i = 0; i < n; ++i) {
    CHECK(copied.value()[size_t(i)] == float(i));
    CHECK(zeroed.value()[size_t(i)] == 0.0f);
  }
  CHECK(seq->copy(*a, *b).code() == rill::StatusCode::kFailedPrecondition);  // finished
}

// Vulkan forbids a copy between overlapping ranges: a tensor onto itself is nothing to do (so
// ops::convert between one type stays legal), two overlapping views of one buffer are refused.
GPU_TEST_CASE("a copy between overlapping memory is refused, onto itself it does nothing", "[transfer][gpu]") {
  auto ctx = rill_test::make_context();
  auto t = ctx.tensor(rill::DType::kF32, {256});
  REQUIRE(t.is_ok());
  std::vector<float> values(256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i);
  REQUIRE(ctx.upload_floats(*t, values).is_ok());
  auto front = t->rows(0, 128), shifted = t->rows(64, 128);
  REQUIRE((front.is_ok() && shifted.is_ok()));
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  REQUIRE(seq->copy(*t, *t).is_ok());
  const rill::Status overlap = seq->copy(*front, *shifted);
  CHECK(overlap.code() == rill::StatusCode::kInvalidArgument);
  CHECK(overlap.message().find("overlap") != std::string::npos);
  REQUIRE(seq->run().is_ok());
  CHECK(ctx.download_floats(*t).value() == values);
}
