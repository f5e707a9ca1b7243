// Block attention forward against the reference: odd lengths (a partial last block), block sizes,
// causal and not, head dims 1..128, f32 and f16; huge logits stay finite.
#include "block_attention.hpp"
#include "op_test.hpp"
#include "rill/ops/block_attention.hpp"

namespace {

using rill::DType;

struct Case {
  int64_t batch, heads, n, dk, dv;
  uint32_t block;
  bool causal;
};

// A block is one workgroup: a device that runs fewer invocations at once (Vulkan's minimum of 128
// under the vulkan11-minimum limit profile) refuses a longer block by name. True where it did.
bool refuses_block(const rill::Context& ctx, uint32_t block, const rill::Status& recorded) {
  const auto& caps = ctx.device().caps;
  if (block <= std::min(caps.max_workgroup_size[0], caps.max_workgroup_invocations)) return false;
  CHECK(recorded.code() == rill::StatusCode::kInvalidArgument);
  CHECK(recorded.message().find("a block is one workgroup") != std::string::npos);
  return true;
}

void run_case(rill::Context& ctx, const Case& c, DType dtype, uint32_t seed, float q_scale = 1.0f) {
  INFO("B " << c.batch << " H " << c.heads << " N " << c.n << " Dk " << c.dk << " Dv " << c.dv << " block " << c.block
            << " causal " << c.causal << " f16 " << (dtype == DType::kF16) << " q_scale " << q_scale << " seed " << seed);
  const int64_t bh = c.batch * c.heads;
  auto q = rill_test::random_vector(size_t(bh * c.n * c.dk), seed);
  for (float& x : q) x *= q_scale;
  q = rill_test::stored(q, dtype);
  const auto k = rill_test::stored(rill_test::random_vector(size_t(bh * c.n * c.dk), seed + 1), dtype);
  const auto v = rill_test::stored(rill_test::random_vector(size_t(bh * c.n * c.dv), seed + 2), dtype);
  const float scale = 1.0f / std::sqrt(float(c.dk));
  std::vector<float> o_ref, lse_ref;
  rill::ref::block_attention_forward(q, k, v, bh, c.n, c.dk, c.dv, c.block, c.causal, scale, o_ref, lse_ref);
  auto tq = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, q);
  auto tk = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, k);
  auto tv = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, v);
  auto to = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv});
  auto tl = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.n});
  auto seq = ctx.sequence();
  const rill::Status recorded =
      rill::ops::block_attention_forward(*seq, tq, tk, tv, to, tl, {.block = c.block, .causal = c.causal});
  INFO(recorded.to_string());
  if (refuses_block(ctx, c.block, recorded)) return;
  REQUIRE(recorded.is_ok());
  REQUIRE(seq->run().is_ok());
  // Outputs are convex combinations of v (|v| <= 1); lse grows with the logits.
  const bool f16 = dtype == DType::kF16;
  rill_test::require_close(rill_test::read(ctx, to), o_ref, f16 ? 2e-3 : 2e-6, f16 ? 2e-3 : 2e-5, "o");
  rill_test::require_close(rill_test::read(ctx, tl), lse_ref, 1e-5, 1e-5, "lse");
}

// The backward after the forward, against the reference gradients.
void run_backward_case(rill::Context& ctx, const Case& c, DType dtype, uint32_t seed) {
  INFO("B " << c.batch << " H " << c.heads << " N " << c.n << " Dk " << c.dk << " Dv " << c.dv << " block " << c.block
            << " causal " << c.causal << " f16 " << (dtype == DType::kF16) << " seed " << seed);
  const int64_t bh = c.batch * c.heads;
  const auto q = rill_test::stored(rill_test::random_vector(size_t(bh * c.n * c.dk), seed, -2.0f, 2.0f), dtype);
  const auto k = rill_test::stored(rill_test::random_vector(size_t(bh * c.n * c.dk), seed + 1, -2.0f, 2.0f), dtype);
  const auto v = rill_test::stored(rill_test::random_vector(size_t(bh * c.n * c.dv), seed + 2), dtype);
  const auto d_o = rill_test::stored(rill_test::random_vector(size_t(bh * c.n * c.dv), seed + 3), dtype);
  const float scale = 1.0f / std::sqrt(float(c.dk));
  std::vector<float> dq_ref, dk_ref, dv_ref;
  rill::ref::block_attention_backward(q, k, v, d_o, bh, c.n, c.dk, c.dv, c.block, c.causal, scale, dq_ref, dk_ref,
                                      dv_ref);
  auto tq = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, q);
  auto tk = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dk}, k);
  auto tv = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, v);
  auto tdo = rill_test::tensor_from(ctx, dtype, {c.batch, c.heads, c.n, c.dv}, d_o);
  auto to = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv});
  auto tl = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.n});
  auto tdelta = rill_test::empty_tensor(ctx, DType::kF32, {c.batch, c.heads, c.n});
  auto tdq = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dk});
  auto tdk = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dk});
  auto tdv = rill_test::empty_tensor(ctx, dtype, {c.batch, c.heads, c.n, c.dv});
  const rill::ops::BlockAttentionOptions opt{.block = c.block, .causal = c.causal};
  auto seq = ctx.sequence();
  const rill::Status forward = rill::ops::block_attention_forward(*seq, tq, tk, tv, to, tl, opt);
  INFO(forward.to_string());
  if (refuses_block(ctx, c.block, forward)) return;
  REQUIRE(forward.is_ok());
  REQUIRE(rill::ops::block_attention_backward(*seq, tq, tk, tv, to, tl, tdo, tdq, tdk, tdv, tdelta, opt).is_ok());
  REQUIRE(seq->run().is_ok());
  const bool f16 = dtype == DType::kF16;
  // f16: o is rounded before delta = do . o, so the gradients carry that rounding too.
  const double atol = f16 ? 1e-2 : 1e-5, rtol = f16 ? 1e-2 : 1e-4;
  rill_test::require_close(rill_test::read(ctx, tdq), dq_ref, atol, rtol, "dq");
  rill_test::require_close(rill_test::read(ctx, tdk), dk_ref, atol, rtol, "dk");
  rill_test::require_close(rill_test::read(ctx, tdv), dv_ref, atol, rtol, "dv");
  // delta_t = do_t . o_t, an output too (the forward's o as stored).
  const std::vector<float> o = rill_test::read(ctx, to);
  std::vector<float> delta_ref(size_t(bh * c.n));
  for (size_t t = 0; t < delta_ref.size(); ++t) {
    double sum = 0.0;
    for (int64_t j = 0; j < c.dv; ++j) sum += double(d_o[t * c.dv + j]) * o[t * c.dv + j];
    delta_ref[t] = float(sum);
  }
  rill_test::require_close(rill_test::read(ctx, tdelta), delta_ref, 1e-5, 1e-4, "delta");
}

}  // namespace

GPU_TEST_CASE("block attention matches the reference over odd shapes", "[block-attention][gpu]") {
  const Case cases[] = {{1, 1, 1, 1, 1, 64, true},
                        {1, 2, 7, 16, 17, 64, true},
                        {2, 1, 65, 8, 8, 64, false},
                        {1, 3, 130, 33, 5, 16, true},
                        {1, 1, 63, 64, 64, 7, false},
                        {1, 1, 200, 128, 128, 64, true},
                        {2, 2, 100, 12, 24, 1, true},
                        {1, 2, 45, 9, 3, 12, true},
                        {1, 1, 29, 5, 7, 13, false},
                        // Block 48: the GPU softmax's 5 invocations per row leave a workgroup's last one idle.
                        {1, 1, 101, 16, 16, 48, true},
                        {1, 1, 96, 8, 8, 48, false},
                        // Blocks past 64: GPUs run the flash kernel over 64-row tiles (a short last
                        // tile in blocks of 65, 100 and 200, and in a partial last block), heads of
                        // 128 in two rounds of output blocks.
                        {1, 1, 150, 8, 20, 100, true},
                        {1, 2, 130, 16, 8, 65, false},
                        {1, 1, 300, 48, 48, 256, true},
                        {1, 2, 200, 33, 5, 128, false},
                        {1, 1, 150, 128, 128, 100, true}};
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    uint32_t seed = 1;
    for (DType dtype : rill_test::float_dtypes(ctx))
      for (const Case& c : cases) run_case(ctx, c, dtype, seed += 10);
  }
}

GPU_TEST_CASE("block attention over more blocks than one row of workgroups holds", "[block-attention][gpu][sweep]") {
  // 32,769 blocks of 64: the CPU drivers' forward cannot put both of a block's row groups side by
  // side in x (65,535 workgroups at most), so it takes them from z instead.
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    run_case(ctx, {1, 1, 32768 * 64 + 37, 1, 1, 64, true}, DType::kF32, 7);
    // The CPU drivers' backward has 8 query and key row groups per block: z from 8,192 blocks.
    run_backward_case(ctx, {1, 1, 8192 * 64 + 5, 1, 1, 64, true}, DType::kF32, 8);
  }
}

GPU_TEST_CASE("block attention stays finite with logits of 1e4", "[block-attention][gpu]") {
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    // q scaled so that q.k / sqrt(Dk) reaches ~1e4: a naive exp would overflow.
    run_case(ctx, {1, 2, 70, 16, 8, 64, true}, DType::kF32, 5, 4e4f);
    run_case(ctx, {1, 1, 33, 4, 4, 16, false}, DType::kF32, 6, 2e4f);
    // Blocks past 64 (GPUs: the flash kernels): a later key tile whose maximum lies far above the
    // earlier ones' shrinks the accumulators by exp(-huge) = 0 rather than overflowing.
    run_case(ctx, {1, 1, 300, 16, 8, 256, true}, DType::kF32, 7, 4e4f);
    run_case(ctx, {1, 1, 200, 8, 8, 128, false}, DType::kF32, 8, 4e4f);
  }
}

GPU_TEST_CASE("block attention rejects bad shapes and options", "[block-attention][gpu]") {
  auto ctx = rill_test::make_context();
  auto q = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 4});
  auto v = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 6});
  auto wide = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10, 129});
  auto lse = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 10});
  auto lse_short = rill_test::empty_tensor(ctx, DType::kF32, {1, 2, 9});
  auto seq = ctx.sequence();
  using rill::StatusCode;
  CHECK(rill::ops::block_attention_forward(*seq, q, q, v, v, lse_short).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::block_attention_forward(*seq, q, q, wide, wide, lse).code() == StatusCode::kUnimplemented);
  CHECK(rill::ops::block_attention_forward(*seq, q, q, v, v, lse, {.block = 0}).code() == StatusCode::kInvalidArgument);
  CHECK(rill::ops::block_attention_forward(*seq, q, q, v, q, lse).code() == StatusCode::kInvalidArgument);
  CHECK(seq->stats().dispatches == 0);
}

GPU_TEST_CASE("the tiled GPU block-attention kernels match the reference at every forced tile depth",
              "[block-attention][gpu]") {
  // RILL_KERNEL_PLAN=block_tile=N (a GPU sweep's knob). A depth the shared memory cannot hold is
  // refused by name: 32-deep tiles of blocks of 64 need more than 32 KiB.
  {
    auto options = rill_test::validated_options();
    options.kernel_variant = "gpu";
    options.kernel_plan = "block_tile=32";
    auto ctx = rill_test::make_context(options);
    if (ctx.device().caps.shared_memory_bytes < 40 * 1024) {
      auto q = rill_test::empty_tensor(ctx, DType::kF32, {1, 1, 64, 64});
      auto o = rill_test::empty_tensor(ctx, DType::kF32, {1, 1, 64, 64});
      auto lse = rill_test::empty_tensor(ctx, DType::kF32, {1, 1, 64});
      auto seq = ctx.sequence();
      const rill::Status refused = rill::ops::block_attention_forward(*seq, q, q, q, o, lse, {.block = 64});
      CHECK(refused.code() == rill::StatusCode::kInvalidArgument);
      CHECK(refused.message().find("block_tile") != std::string::npos);
    }
  }
  // Each depth on blocks whose tiles fit 32 KiB (lavapipe's; a 16 KiB limit profile skips these).
  struct Sweep {
    const char* tile;
    std::vector<Case> cases;
  };
  const Sweep sweeps[] = {
      {"4", {{1, 2, 130, 16, 24, 64, true}, {1, 1, 70, 40, 3, 64, false}}},
      {"8", {{1, 2, 130, 16, 24, 64, true}, {1, 1, 101, 33, 9, 48, false}, {1, 1, 150, 16, 24, 100, true}}},
      {"32", {{1, 2, 100, 16, 24, 32, true}, {1, 1, 70, 40, 3, 16, false}}},
  };
  for (const Sweep& sweep : sweeps) {
    auto options = rill_test::validated_options();
    options.kernel_variant = "gpu";
    options.kernel_plan = std::string("block_tile=") + sweep.tile;
    auto ctx = rill_test::make_context(options);
    if (ctx.device().caps.shared_memory_bytes < 32 * 1024) {
      WARN("skipped: block_tile=" << sweep.tile << " sweep needs 32 KiB of shared memory; the device has "
                                  << ctx.device().caps.shared_memory_bytes << " bytes");
      continue;
    }
    INFO("block_tile=" << sweep.tile);
    uint32_t seed = 70;
    for (const Case& c : sweep.cases) {
      run_case(ctx, c, DType::kF32, seed += 3);
      run_backward_case(ctx, c, DType::kF32, seed += 3);
    }
  }
  // 32-deep tiles past blocks of 32: the tiled kernels at blocks of 64 and the flash ones past 64
  // take 44-45 KB (the flash forward 44,800 bytes: its tiles are sized for heads up to 128), which a
  // GPU with NVIDIA's 48 KiB runs here before its sweep times them (tools/gpu-check.sh block_sweep);
  // a device with less than 40 KiB (lavapipe, the limit profiles) refuses the flash kernels' too, by
  // name, as the tiled ones' above.
  {
    auto options = rill_test::validated_options();
    options.kernel_variant = "gpu";
    options.kernel_plan = "block_tile=32";
    auto ctx = rill_test::make_context(options);
    if (ctx.device().caps.shared_memory_bytes >= 48 * 1024) {
      const Case deep[] = {{1, 2, 130, 64, 64, 64, true},
                           {1, 1, 100, 128, 128, 64, false},
                           {1, 1, 150, 128, 128, 100, true},
                           {1, 1, 300, 64, 40, 256, false},
                           {1, 2, 200, 33, 5, 128, true}};
      uint32_t seed = 170;
      for (const Case& c : deep) {
        run_case(ctx, c, DType::kF32, seed += 3);
        run_backward_case(ctx, c, DType::kF32, seed += 3);
      }
    } else if (ctx.device().caps.shared_memory_bytes < 40 * 1024) {
      auto q = rill_test::empty_tensor(ctx, DType::kF32, {1, 1, 130, 64});
      auto o = rill_test::empty_tensor(ctx, DType::kF32, {1, 1, 130, 64});
      auto lse = rill_test::empty_tensor(ctx, DType::kF32, {1, 1, 130});
      auto seq = ctx.sequence();
      const rill::Status refused = rill::ops::block_attention_forward(*seq, q, q, q, o, lse, {.block = 128});
      INFO(refused.to_string());
      CHECK(refused.code() == rill::StatusCode::kInvalidArgument);
      CHECK(refused.message().find("block_tile") != std::string::npos);
    }
  }
}

// RILL_KERNEL_PLAN=block_rounds=fused|separate: products whose results take several rounds of a
// workgroup's 4 x 4 blocks (heads past 64 at 256 invocations, past 32 at 128: up to four rounds;
// widths that leave invocations idle) walk their operand's tiles once for every round or once for
// all, in the tiled kernels (blocks up to 64) and the flash ones (past 64), forward and backward,
// causal or not, partial last blocks.
GPU_TEST_CASE("the GPU block-attention kernels match the reference with rounds walked together or apart",
              "[block-attention][gpu]") {
  const Case tiled_128 = {1, 2, 130, 128, 128, 64, true}, tiled_100 = {1, 1, 100, 100, 36, 64, false},
             tiled_wide_v = {1, 1, 70, 24, 128, 48, true}, tiled_88 = {1, 1, 100, 88, 88, 64, true},
             flash_128 = {1, 1, 150, 128, 128, 100, true}, flash_narrow_k = {1, 1, 200, 36, 100, 128, false},
             flash_narrow_v = {1, 1, 90, 128, 8, 80, true};
  // The tiled kernels' default (apart, at 256 invocations) runs over these shapes in the tests above.
  struct Sweep {
    const char* plan;
    std::vector<Case> cases;
  };
  const Sweep sweeps[] = {
      {"block_rounds=fused", {tiled_128, tiled_100, tiled_wide_v, tiled_88, flash_128, flash_narrow_k, flash_narrow_v}},
      {"block_rounds=separate", {flash_128, flash_narrow_k, flash_narrow_v}},
      // Four rounds at heads of 128; heads of 88 (22 column groups) leave invocations idle fused.
      {"block_rounds=fused,block_workgroup=128", {tiled_128, tiled_88, flash_128}},
      {"block_rounds=separate,block_workgroup=128", {tiled_88, flash_narrow_v}},
  };
  for (const Sweep& sweep : sweeps) {
    auto options = rill_test::validated_options();
    options.kernel_variant = "gpu";
    options.kernel_plan = sweep.plan;
    auto ctx = rill_test::make_context(options);
    INFO(sweep.plan);
    uint32_t seed = 2000;
    for (const Case& c : sweep.cases) {
      run_case(ctx, c, DType::kF32, seed += 3);
      run_backward_case(ctx, c, DType::kF32, seed += 3);
    }
  }
}

GPU_TEST_CASE("block attention backward matches the reference gradients", "[block-attention][gpu]") {
  const Case cases[] = {{1, 1, 1, 1, 1, 64, true},
                        {1, 2, 7, 16, 17, 64, true},
                        {2, 1, 65, 8, 8, 64, false},
                        {1, 3, 130, 33, 5, 16, true},
                        {1, 1, 63, 64, 64, 7, false},
                        {1, 1, 100, 128, 128, 64, true},
                        {1, 1, 70, 40, 3, 64, false},
                        {1, 2, 41, 5, 24, 20, true},
                        // Blocks past 64: the flash kernels on GPUs (heads past 64 on CPU drivers:
                        // the generic kernels).
                        {1, 1, 150, 8, 12, 100, true},
                        {1, 1, 300, 48, 48, 256, true},
                        {1, 2, 200, 33, 5, 128, false},
                        {1, 1, 150, 128, 128, 100, true}};
  // Under emulation (each case's register kernels took qemu 15-20 s to compile): every fourth case,
  // both causal forms and the generic kernels among them.
  if (rill_test::emulated()) WARN("backward cases 2-4 and 6-8 left out under emulation (compile time)");
  for (rill::Context& ctx : rill_test::both_kernel_families()) {
    INFO(ctx.kernel_variant("util/saxpy").value());
    uint32_t seed = 900;
    for (DType dtype : rill_test::float_dtypes(ctx))
      for (size_t i = 0; i < std::size(cases); ++i) {
        seed += 10;
        if (!rill_test::emulated() || i % 4 == 0) run_backward_case(ctx, cases[i], dtype, seed);
      }
  }
}

namespace {

// The kernel a forward of 4 heads of D 8 over 70 positions dispatches on `ctx`.
std::string kernel_of_forward(rill::Context& ctx, DType dtype) {
  auto q = rill_test::empty_tensor(ctx, dtype, {1, 4, 70, 8});
  auto o = rill_test::empty_tensor(ctx, dtype, {1, 4, 70, 8});
  auto lse = rill_test::empty_tensor(ctx, DType::kF32, {1, 4, 70});
  return rill_test::kernel_of(
      ctx, [&](rill::Sequence& seq) { return rill::ops::block_attention_forward(seq, q, q, q, o, lse); });
}

}  // namespace

// The CPU drivers' register kernels read q, k and v (and o, dO) as texels where the device backs
// them and take two keys per step (the other cases above run that form); here the storage-buffer
// rows with one key per step, which devices without the texels take, over the cases of whole
// 4-element rows, f32 and f16.
GPU_TEST_CASE("the CPU block-attention kernels without texels match the reference too", "[block-attention][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  rill::Context texels = rill_test::make_context(options);
  const rill::DeviceCaps& caps = texels.device().caps;
  CHECK(kernel_of_forward(texels, DType::kF32) == (caps.texel_buffer_f32x4
                                                       ? "block_attention/block_attention_fwd_cpu_tx_f32"
                                                       : "block_attention/block_attention_fwd_cpu_vec4_f32"));
  options.kernel_plan = "block_texel=off,block_keys=1";
  rill::Context plain = rill_test::make_context(options);
  CHECK(kernel_of_forward(plain, DType::kF32) == "block_attention/block_attention_fwd_cpu_vec4_f32");
  const Case cases[] = {{2, 1, 65, 8, 8, 64, false},
                        {1, 1, 63, 64, 64, 7, false},
                        {2, 2, 100, 12, 24, 1, true},
                        {1, 1, 101, 16, 16, 48, true}};
  uint32_t seed = 1500;
  for (DType dtype : rill_test::float_dtypes(plain))
    for (size_t i = 0; i < std::size(cases); ++i) {
      run_case(plain, cases[i], dtype, seed += 10);
      if (i % 2 == 0) run_backward_case(plain, cases[i], dtype, seed);
    }
}

// Context::set_kernel_plan replaces the forced choices for what is recorded afterwards (rill bench
// times two plans side by side on the same tensors with it); a bad plan leaves the old one.
GPU_TEST_CASE("a context's kernel plan can be replaced between recordings", "[block-attention][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  rill::Context ctx = rill_test::make_context(options);
  const std::string texels = ctx.device().caps.texel_buffer_f32x4 ? "block_attention/block_attention_fwd_cpu_tx_f32"
                                                                  : "block_attention/block_attention_fwd_cpu_vec4_f32";
  CHECK(kernel_of_forward(ctx, DType::kF32) == texels);
  REQUIRE(ctx.set_kernel_plan("block_texel=off").is_ok());
  CHECK(ctx.kernel_plan() == "block_texel=off");
  CHECK(kernel_of_forward(ctx, DType::kF32) == "block_attention/block_attention_fwd_cpu_vec4_f32");
  const rill::Status bad = ctx.set_kernel_plan("block_texel=maybe");
  CHECK(bad.code() == rill::StatusCode::kInvalidArgument);
  CHECK(bad.message().find("block_texel") != std::string::npos);
  CHECK(ctx.kernel_plan() == "block_texel=off");
  CHECK(kernel_of_forward(ctx, DType::kF32) == "block_attention/block_attention_fwd_cpu_vec4_f32");
  REQUIRE(ctx.set_kernel_plan("").is_ok());
  CHECK(kernel_of_forward(ctx, DType::kF32) == texels);
}

// The CPU drivers' backward takes dq from the dS its key groups wrote, in windows of the blocks
// whose dS fit its scratch; here several windows, and the query groups it keeps for blocks too big
// for the scratch (block_dq=rows), over odd shapes.
GPU_TEST_CASE("the CPU block-attention backward in windows of blocks and with query groups", "[block-attention][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_variant = "cpu";
  rill::Context windows = rill_test::make_context(options);
  // Two heads of 4: 512 blocks of 64 per window of 16 MiB, so 1,025 blocks take three windows.
  run_backward_case(windows, {1, 2, 1024 * 64 + 37, 4, 4, 64, true}, DType::kF32, 1700);
  run_backward_case(windows, {1, 2, 1024 * 64 + 37, 4, 4, 64, false}, DType::kF32, 1710);
  options.kernel_plan = "block_dq=rows";
  rill::Context rows = rill_test::make_context(options);
  const Case cases[] = {{1, 2, 7, 16, 17, 64, true},
                        {2, 1, 65, 8, 8, 64, false},
                        {1, 1, 63, 64, 64, 7, false},
                        {1, 2, 41, 5, 24, 20, true}};
  uint32_t seed = 1800;
  for (DType dtype : rill_test::float_dtypes(rows))
    for (const Case& c : cases) run_backward_case(rows, c, dtype, seed += 10);
}

TEST_CASE("the block attention reference gradients equal central finite differences", "[block-attention]") {
  const int64_t n = 9, dk = 3, dv = 2, block = 4;
  for (bool causal : {true, false}) {
    const auto q = rill_test::random_vector(size_t(n * dk), 1), k = rill_test::random_vector(size_t(n * dk), 2);
    const auto v = rill_test::random_vector(size_t(n * dv), 3), w = rill_test::random_vector(size_t(n * dv), 4);
    auto loss = [&](const std::vector<float>& qq, const std::vector<float>& kk, const std::vector<float>& vv) {
      std::vector<float> o, lse;
      rill::ref::block_attention_forward(qq, kk, vv, 1, n, dk, dv, block, causal, 0.5f, o, lse);
      double l = 0.0;
      for (size_t i = 0; i < o.size(); ++i) l += double(w[i]) * o[i];
      return l;
    };
    std::vector<float> dq, dkey, dval;
    rill::ref::block_attention_backward(q, k, v, w, 1, n, dk, dv, block, causal, 0.5f, dq, dkey, dval);
    const float h = 1e-3f;
    auto check = [&](const std::vector<float>& x, const std::vector<float>& grad, int which, const char* name) {
      for (size_t i = 0; i < x.size(); ++i) {
        auto up = x, down = x;
        up[i] += h;
        down[i] -= h;
        const double lu = which == 0 ? loss(up, k, v) : which == 1 ? loss(q, up, v) : loss(q, k, up);
        const double ld = which == 0 ? loss(down, k, v) : which == 1 ? loss(q, down, v) : loss(q, k, down);
        INFO(name << "[" << i << "] causal " << causal);
        CHECK(grad[i] == Approx((lu - ld) / (2.0 * h)).margin(1e-3).epsilon(1e-3));
      }
    };
    check(q, dq, 0, "dq");
    check(k, dkey, 1, "dk");
    check(v, dval, 2, "dv");
  }
}
