// A dispatch that does not match its kernel is refused with InvalidArgument (or NotFound for
// names), records nothing, and leaves the sequence usable.
#include <algorithm>
#include <cmath>

#include "gpu_test.hpp"
#include "op_test.hpp"
#include "rill/rill.hpp"
#include "vk/kernel_contracts.hpp"

namespace {

struct Fixture {
  rill::Context ctx = rill_test::make_context();
  rill::Tensor x = std::move(ctx.tensor(rill::DType::kF32, {100}, "x")).value();
  rill::Tensor y = std::move(ctx.tensor(rill::DType::kF32, {100}, "y")).value();
  rill::Sequence seq = std::move(ctx.sequence()).value();
};

}  // namespace

GPU_TEST_CASE("bad dispatches are refused with a message naming the problem", "[dispatch][gpu]") {
  Fixture f;
  using rill::StatusCode;
  auto expect = [&](rill::Dispatch d, StatusCode code, const char* text) {
    const rill::Status s = f.seq.dispatch(d);
    INFO(s.to_string());
    CHECK(s.code() == code);
    CHECK(s.message().find(text) != std::string::npos);
  };
  const auto good = rill_test::saxpy_dispatch(f.x, f.y, 100, 2.0f);
  auto d = good;
  d.kernel = "util/no_such_kernel";
  expect(d, StatusCode::kNotFound, "no kernel named");
  d = good;
  d.bindings = {&f.x};
  expect(d, StatusCode::kInvalidArgument, "has 2 bindings");
  d = good;
  d.bindings = {&f.x, nullptr};
  expect(d, StatusCode::kInvalidArgument, "binding 1");
  d = good;
  d.push.bytes.pop_back();
  expect(d, StatusCode::kInvalidArgument, "8 bytes of push constants");
  d = good;  // the right size, but another kernel's struct
  d.push = rill::push_bytes(rill::gpu::FillPush{100, 2.0f});
  expect(d, StatusCode::kInvalidArgument, "takes push constants SaxpyPush; the dispatch gives FillPush");
  d = good;
  d.spec = {rill::spec_uint("NOPE", 1)};
  expect(d, StatusCode::kInvalidArgument, "no specialization constant 'NOPE'");
  d = good;
  d.spec = {rill::spec_uint("WG_SIZE", 100000)};
  expect(d, StatusCode::kInvalidArgument, "workgroup size");
  d = good;
  d.groups = {0, 1, 1};
  expect(d, StatusCode::kInvalidArgument, "workgroup count 0");
  d = good;
  d.groups = {1, 1, f.ctx.device().caps.max_workgroup_count[2] + 1};
  expect(d, StatusCode::kInvalidArgument, "dimension 2");
  d = good;
  d.variant = "fpga";
  expect(d, StatusCode::kNotFound, "no variant 'fpga'");
  CHECK(f.seq.stats().dispatches == 0);

  // The sequence is intact: a good dispatch after the bad ones runs correctly.
  REQUIRE(f.ctx.upload_floats(f.x, std::vector<float>(100, 1.0f)).is_ok());
  REQUIRE(f.ctx.upload_floats(f.y, std::vector<float>(100, 1.0f)).is_ok());
  REQUIRE(f.seq.dispatch(good).is_ok());
  REQUIRE(f.seq.run().is_ok());
  CHECK(f.ctx.download_floats(f.y).value()[99] == 3.0f);
}

GPU_TEST_CASE("tensors from another context cannot be bound", "[dispatch][gpu]") {
  Fixture f;
  auto other = rill_test::make_context();
  auto foreign = other.tensor(rill::DType::kF32, {100});
  REQUIRE(foreign.is_ok());
  const rill::Status s = f.seq.dispatch(rill_test::saxpy_dispatch(*foreign, f.y, 100, 1.0f));
  CHECK(s.code() == rill::StatusCode::kInvalidArgument);
  CHECK(s.message().find("another context") != std::string::npos);
}

GPU_TEST_CASE("submission and read-back are checked against the sequence's state", "[dispatch][gpu]") {
  Fixture f;
  REQUIRE(f.seq.dispatch(rill_test::fill_dispatch(f.x, 100, 1.0f)).is_ok());
  auto id = f.seq.download(f.x);
  REQUIRE(id.is_ok());
  std::vector<uint8_t> bytes(400);
  CHECK(f.seq.read(*id, bytes).code() == rill::StatusCode::kFailedPrecondition);  // not submitted
  CHECK(f.seq.submit(0).code() == rill::StatusCode::kInvalidArgument);
  CHECK(f.seq.submit(rill::Sequence::kMaxReplays + 1).code() == rill::StatusCode::kInvalidArgument);
  REQUIRE(f.seq.run().is_ok());
  CHECK(f.seq.read(*id, bytes).is_ok());
  CHECK(f.seq.read(rill::DownloadId{5}, bytes).code() == rill::StatusCode::kInvalidArgument);
  std::vector<uint8_t> small(3);
  CHECK(f.seq.read(*id, small).code() == rill::StatusCode::kInvalidArgument);
  CHECK(f.seq.dispatch(rill_test::fill_dispatch(f.x, 100, 1.0f)).code() == rill::StatusCode::kFailedPrecondition);
  CHECK(f.seq.timings().status().code() == rill::StatusCode::kFailedPrecondition);  // made without timestamps
}

// A texel binding views its tensor in the tensor's own type: a samplerBuffer reads floats, a
// usamplerBuffer (the words of packed weights) u32 words; the other pairing is refused by name.
GPU_TEST_CASE("texel bindings take tensors of their own kind of texel", "[dispatch][gpu]") {
  rill::Context ctx = rill_test::make_context(rill_test::validated_options());
  auto floats = rill_test::empty_tensor(ctx, rill::DType::kF32, {64, 64});
  auto words = rill_test::empty_tensor(ctx, rill::DType::kU32, {64, 16});
  auto scales = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 64});
  auto seq = ctx.sequence();
  rill::Dispatch d{.kernel = "matmul/matmul_tx_q8_f32",
                   .bindings = {&floats, &floats, &floats, &floats, &scales},
                   .push = rill::push_bytes(rill::gpu::MatmulPush{}),
                   .variant = "cpu"};
  rill::Status s = seq->dispatch(d);
  CHECK(s.code() == rill::StatusCode::kInvalidArgument);
  CHECK(s.message().find("binding 1 (bw4): a usamplerBuffer reads u32 tensors") != std::string::npos);
  d.bindings = {&words, &words, &floats, &floats, &scales};
  s = seq->dispatch(d);
  CHECK(s.code() == rill::StatusCode::kInvalidArgument);
  CHECK(s.message().find("binding 0 (a4): a samplerBuffer reads f32 or f16 tensors") != std::string::npos);
  CHECK(seq->stats().dispatches == 0);
}

GPU_TEST_CASE("a texel read of a view orders the writes to the bytes its texel view reaches past it",
              "[dispatch][gpu]") {
  // Row 0 of a [2, 16384] f32 tensor is 64 KiB: its texel view takes one more 256-byte granule
  // (texel_views.hpp), the start of row 1. A fill of row 1 after the read must wait for it.
  rill::Context ctx = rill_test::make_context(rill_test::validated_options());
  const uint32_t n = 16384;
  auto x = std::move(ctx.tensor(rill::DType::kF32, {2, n}, "x")).value();
  auto out = std::move(ctx.tensor(rill::DType::kF32, {n}, "out")).value();
  const rill::Tensor row0 = x.rows(0, 1).value(), row1 = x.rows(1, 1).value();
  auto seq = std::move(ctx.sequence()).value();
  REQUIRE(seq.dispatch({.kernel = "elementwise/silu_tx_f32",
                        .bindings = {&row0, &row0, &out},
                        .push = rill::push_bytes(rill::gpu::CountPush{n}),
                        .groups = {n / 4 / 64, 1, 1},
                        .spec = {rill::spec_uint("WG_SIZE", 64)}})  // within every limit profile
              .is_ok());
  const uint32_t before = seq.stats().barriers;
  REQUIRE(seq.fill_zero(row1).is_ok());
  CHECK(seq.stats().barriers == before + 1);
  REQUIRE(seq.run().is_ok());  // and the validation layer, synchronization too, says nothing
}

GPU_TEST_CASE("a view's upload and download wait for the GPU's use of the tensor it views", "[dispatch][gpu]") {
  // The work is submitted, not waited for: the context's copy through a view (made before the
  // work) must wait for it as a copy through the tensor does, not read while the fills still run.
  auto ctx = rill_test::make_context();
  const uint32_t n = 1u << 18;  // 100 fills of 1 MiB: the GPU's work outlasts a copy many times
  auto x = std::move(ctx.tensor(rill::DType::kF32, {n}, "x")).value();
  const rill::Tensor flat = x.reshaped({int64_t(n / 4), 4}).value();
  const rill::Tensor tail = x.rows(n / 2, n / 2).value();
  auto seq = std::move(ctx.sequence()).value();
  for (int k = 0; k < 100; ++k) REQUIRE(seq.dispatch(rill_test::fill_dispatch(x, n, float(k))).is_ok());
  REQUIRE(seq.submit().is_ok());
  const std::vector<float> got = ctx.download_floats(tail).value();
  CHECK(std::count(got.begin(), got.end(), 99.0f) == ptrdiff_t(got.size()));
  // An upload through a view after the GPU's last write: the GPU's value never lands on it.
  REQUIRE(seq.submit().is_ok());
  REQUIRE(ctx.upload_floats(flat, std::vector<float>(n, -1.0f)).is_ok());
  REQUIRE(seq.wait().is_ok());
  const std::vector<float> after = ctx.download_floats(x).value();
  CHECK(std::count(after.begin(), after.end(), -1.0f) == ptrdiff_t(after.size()));
}

GPU_TEST_CASE("fill_zero refuses a view of part of a word inside its tensor", "[dispatch][gpu]") {
  // Vulkan fills whole 4-byte words: a view of 254 bytes would clear its tensor's next element.
  auto ctx = rill_test::make_context();
  // Rows of 254 bytes: row 128 starts 127 x 256 bytes in, where a view may start.
  auto t = std::move(ctx.tensor(rill::DType::kF16, {129, 127}, "t")).value();
  auto seq = std::move(ctx.sequence()).value();
  const rill::Status inside = seq.fill_zero(t.rows(0, 1).value());
  CHECK(inside.code() == rill::StatusCode::kInvalidArgument);
  CHECK(inside.message().find("not whole 4-byte words") != std::string::npos);
  CHECK(seq.fill_zero(t.rows(128, 1).value()).is_ok());  // the last row: past it is padding
  CHECK(seq.fill_zero(t).is_ok());
  REQUIRE(seq.run().is_ok());
}

// Ops that read inputs after writing outputs refuse an output sharing memory with an input (the
// same tensor, or a view of it) or with another output, naming both; nothing is recorded.
GPU_TEST_CASE("ops that do not run in place refuse outputs sharing memory", "[dispatch][gpu]") {
  auto ctx = rill_test::make_context();
  auto a = rill_test::empty_tensor(ctx, rill::DType::kF32, {8, 8});
  auto b = rill_test::empty_tensor(ctx, rill::DType::kF32, {8, 8});
  const rill::Tensor a_view = a.reshaped({64}).value().reshaped({8, 8}).value();
  auto q = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, 16, 8});
  auto k = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, 16, 8});
  auto v = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, 16, 8});
  auto o = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, 16, 8});
  auto lse = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, 16});
  auto state = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, 8, 8});
  auto seq = std::move(ctx.sequence()).value();
  auto refused = [&](const rill::Status& s, const char* names) {
    INFO(s.to_string());
    CHECK(s.code() == rill::StatusCode::kInvalidArgument);
    CHECK(s.message().find(names) != std::string::npos);
    CHECK(s.message().find("share memory") != std::string::npos);
  };
  refused(rill::ops::matmul(seq, a, b, a), "C");
  refused(rill::ops::matmul(seq, a, b, a_view), "C");
  refused(rill::ops::block_attention_forward(seq, q, k, v, v, lse, {.block = 8}), "o");
  refused(rill::ops::linear_attention_forward(seq, q, k, v, v, state), "o");
  refused(rill::ops::linear_attention_backward(seq, q, k, v, o, q, k, v, state), "dq");
  refused(rill::ops::linear_attention_backward(seq, q, k, v, o, o, o, v, state), "dk");
  // A scale that is not a finite number >= 0 is refused, not replaced by 1 / sqrt(Dk).
  for (const float scale : {std::nanf(""), -1.0f, INFINITY})
    CHECK(rill::ops::block_attention_forward(seq, q, k, v, o, lse, {.block = 8, .scale = scale}).code() ==
          rill::StatusCode::kInvalidArgument);
  CHECK(seq.stats().dispatches == 0);
  // Disjoint operands still record.
  CHECK(rill::ops::matmul(seq, a, b, rill_test::empty_tensor(ctx, rill::DType::kF32, {8, 8})).is_ok());
}
