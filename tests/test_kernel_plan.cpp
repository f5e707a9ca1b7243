// Kernel plans for devices rill is not running on: a CPU driver, a datacenter GPU, a phone-class
// GPU. Plans are plain values, so each decision is checked here without a device.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "plan_devices.hpp"

namespace {

using namespace rill::ops::plan;
using rill_test::h100_like;
using rill_test::lavapipe_like;
using rill_test::mali_like;

LinearAttentionShape la_shape(uint64_t heads, uint64_t n, uint32_t dim, uint32_t chunk = 64) {
  return {.heads = heads, .n = n, .dk = dim, .dv = dim, .chunk = chunk};
}

}  // namespace

TEST_CASE("kernel plan: CPU drivers get the register kernels", "[plan]") {
  const DeviceTraits d = lavapipe_like();
  CHECK(rmsnorm_forward(d, 4096).register_kernel);
  CHECK_FALSE(rmsnorm_forward(d, 4097).register_kernel);  // rows past 4096: the generic kernel
  // The backward's one pass: blocks of at least 16 rows, at most 256 blocks of partial dgain sums.
  REQUIRE(rmsnorm_backward(d, 1024, 4096).has_value());
  CHECK(rmsnorm_backward(d, 1024, 4096)->rows_per_block == 16);
  CHECK(rmsnorm_backward(d, 1024, 4096)->blocks == 64);
  CHECK(rmsnorm_backward(d, 1u << 20, 256)->blocks <= 256);
  CHECK(rmsnorm_backward(d, 5, 256)->blocks == 1);
  CHECK_FALSE(rmsnorm_backward(d, 1024, 4097).has_value());
  const MatmulPlan m = matmul(d, {.m = 1024, .n = 1024, .k = 1024});
  CHECK(m.register_kernel);
  CHECK(m.variant() == "cpu");
  CHECK(m.wg_x == 8);
  CHECK(m.tm == 64);
  CHECK(m.wg_x * m.tn == 64);
  CHECK_FALSE(m.fold_batch);
  CHECK(matmul(d, {.m = 1, .n = 1024, .k = 1024}).tm == 1);                   // a decoding step's single row
  CHECK_FALSE(matmul(d, {.m = 64, .n = 64, .k = 1u << 20}).register_kernel);  // K past the loop budget
  // Narrow C: the tile narrows, unless a shared A lets the batches' columns fill it.
  CHECK(matmul(d, {.m = 2048, .n = 32, .k = 256}).tn == 4);
  const MatmulPlan heads = matmul(d, {.m = 2048, .n = 32, .k = 256, .batches = 8, .a_shared = true});
  CHECK(heads.fold_batch);
  CHECK(heads.tn == 8);
  CHECK_FALSE(matmul(d, {.m = 2048, .n = 32, .k = 256, .batches = 8}).fold_batch);
  CHECK_FALSE(matmul(d, {.m = 2048, .n = 256, .k = 256, .batches = 8, .a_shared = true}).fold_batch);
  // A 16-lane CPU driver keeps the 64-column tile (and its compile time).
  DeviceTraits wide = d;
  wide.subgroup = 16;
  CHECK(matmul(wide, {.m = 1024, .n = 1024, .k = 1024}).tn == 4);
  CHECK(block_attention_forward(d, {.block = 64}).rows_per_lane == 4);
  CHECK_FALSE(block_attention_forward(d, {.block = 256}).flash);  // the register kernel, any block
  CHECK(block_attention_forward(d, {.block = 256}).register_kernel);
  CHECK(block_attention_backward(d, {.block = 64}).register_kernel);
  CHECK(block_attention_backward(d, {.block = 64}).rows_per_lane == 2);  // compile time
  CHECK(block_attention_backward(d, {.block = 64, .dk = 32, .dv = 32}).rows_per_lane == 4);
  CHECK(block_attention_backward(d, {.block = 8, .dk = 32, .dv = 32}).rows_per_lane == 1);
  CHECK_FALSE(block_attention_backward(d, {.block = 64, .dk = 128, .dv = 16}).register_kernel);
  CHECK(block_attention_forward(d, {.block = 8}).rows_per_lane == 1);
  CHECK(reduction_workgroup(d) == 8);
  CHECK(rmsnorm_forward(d, 4096).vector_width == 4);
  CHECK(rmsnorm_forward(d, 4094).vector_width == 1);
  CHECK(rmsnorm_backward(d, 64, 4096).value().vector_width == 4);
  const auto la = linear_attention_forward(d, la_shape(4, 65536, 64));
  REQUIRE(la.is_ok());
  CHECK(la.value().algorithm == LinearAttentionAlgorithm::kRegisterScan);
  CHECK(la.value().positions_per_dispatch <= d.loop_budget);
  CHECK(la.value().vector_width == 4);  // loads of 4 where the widths divide into them
  CHECK(linear_attention_forward(d, {.heads = 4, .n = 64, .dk = 64, .dv = 30, .chunk = 64}).value().vector_width == 1);
  // The backward's square register shape (20 x 20) must not hide a real width of 9.
  CHECK(linear_attention_backward(d, {.heads = 4, .n = 64, .dk = 9, .dv = 20, .chunk = 64}).value().vector_width == 1);
  // Non-causal attention and the backward are register scans too, the backward's wider head both ways.
  const auto nc = linear_attention_noncausal(d, la_shape(4, 65536, 64));
  REQUIRE(nc.is_ok());
  CHECK(nc.value().algorithm == LinearAttentionAlgorithm::kRegisterScan);
  const auto bwd = linear_attention_backward(d, {.heads = 4, .n = 65536, .dk = 32, .dv = 128, .chunk = 64});
  REQUIRE(bwd.is_ok());
  CHECK(bwd.value().algorithm == LinearAttentionAlgorithm::kRegisterScan);
  CHECK(bwd.value().columns_per_lane == 2);  // sized for a 128-wide state row
  // Heads of 256 (LRPE's features over heads of 128) one column per lane; past 256 the serial kernel.
  const auto lrpe = linear_attention_forward(d, {.heads = 8, .n = 4096, .dk = 256, .dv = 128, .chunk = 64});
  CHECK(lrpe.value().algorithm == LinearAttentionAlgorithm::kRegisterScan);
  CHECK(lrpe.value().columns_per_lane == 1);
  CHECK(linear_attention_backward(d, {.heads = 4, .n = 4096, .dk = 64, .dv = 256, .chunk = 64}).value().algorithm ==
        LinearAttentionAlgorithm::kRegisterScan);
  CHECK(linear_attention_backward(d, {.heads = 4, .n = 4096, .dk = 64, .dv = 264, .chunk = 64}).value().algorithm ==
        LinearAttentionAlgorithm::kChunkedSerial);
}

TEST_CASE("kernel plan: a datacenter GPU runs linear attention parallel over chunks", "[plan]") {
  const DeviceTraits d = h100_like();
  CHECK_FALSE(rmsnorm_forward(d, 4096).register_kernel);
  CHECK(rmsnorm_forward(d, 4096).workgroup == 256);
  // Few long rows widen the generic kernel's workgroup (the grid within ~128K invocations, two or
  // more vectors each); many rows keep 256, and so do CPU drivers.
  CHECK(rmsnorm_forward(d, 8192, 64).workgroup == 1024);
  CHECK(rmsnorm_forward(d, 8192, 4096).workgroup == 256);
  CHECK(rmsnorm_forward(d, 4096, 64).workgroup == 512);
  CHECK(rmsnorm_forward(lavapipe_like(), 8192, 64).workgroup == lavapipe_like().subgroup);
  CHECK_FALSE(rmsnorm_backward(d, 1024, 4096).has_value());
  const MatmulPlan m = matmul(d, {.m = 1024, .n = 1024, .k = 1024});
  CHECK_FALSE(m.register_kernel);
  CHECK_FALSE(matmul(d, {.m = 2048, .n = 32, .k = 256, .batches = 8, .a_shared = true}).fold_batch);
  CHECK(m.wg_x * m.wg_y == 256);
  // A device with Vulkan's minimum of 128 invocations gets the same 64 x 64 block from fewer.
  DeviceTraits small = d;
  small.max_invocations = 128;
  const MatmulPlan sm = matmul(small, {.m = 1024, .n = 1024, .k = 1024});
  CHECK(sm.wg_x * sm.wg_y == 128);
  CHECK(sm.wg_y * sm.tm == m.wg_y * m.tm);
  CHECK(sm.wg_x * sm.tn == m.wg_x * m.tn);
  CHECK_FALSE(block_attention_forward(d, {.block = 64}).register_kernel);
  CHECK(block_attention_forward(d, {.block = 64}).tiled);
  // Past 64 a block's scores would not fit: the flash kernels over 64-row tiles, up to the largest
  // block (a workgroup's invocations), on a device with Vulkan's minimum of 128 invocations too.
  CHECK_FALSE(block_attention_forward(d, {.block = 128}).tiled);
  for (const uint32_t block : {65u, 128u, 256u, 1024u}) {
    CHECK(block_attention_forward(d, {.block = block}).flash);
    CHECK(block_attention_forward(small, {.block = block}).flash);
    CHECK(block_attention_forward(small, {.block = block}).workgroup == 128);
    CHECK(block_attention_backward(d, {.block = block, .dk = 128, .dv = 128}).flash);
  }
  CHECK_FALSE(block_attention_forward(d, {.block = 64}).flash);
  CHECK(block_attention_backward(d, {.block = 64}).tiled);
  CHECK(block_attention_backward(d, {.block = 64}).tile == 16);
  CHECK_FALSE(block_attention_backward(d, {.block = 65, .dk = 64, .dv = 64}).tiled);
  {
    DeviceTraits deep = d;  // a forced tile depth is kept where it fits, else refused (tile 0)
    deep.forced = parse_overrides("block_tile=32").value();
    CHECK(block_attention_forward(deep, {.block = 64}).tile == 32);
    CHECK(block_attention_backward(deep, {.block = 64, .dk = 64, .dv = 64}).tile == 32);
    DeviceTraits phone = mali_like();
    phone.forced = deep.forced;
    CHECK_FALSE(block_attention_forward(phone, {.block = 32}).tiled);
    for (const char* bad : {"block_tile=2", "block_tile=64", "block_tile=x"}) CHECK_FALSE(parse_overrides(bad).is_ok());
  }
  {
    // Result rounds walked together: the flash kernels' default (their accumulators live over the
    // whole walk anyway), forced either way for both kinds of kernel; CPU drivers have neither.
    CHECK_FALSE(block_attention_forward(d, {.block = 64, .dk = 128, .dv = 128}).fused_rounds);
    CHECK_FALSE(block_attention_backward(d, {.block = 64, .dk = 128, .dv = 128}).fused_rounds);
    CHECK(block_attention_forward(d, {.block = 128, .dk = 128, .dv = 128}).fused_rounds);
    CHECK(block_attention_backward(d, {.block = 128, .dk = 128, .dv = 128}).fused_rounds);
    for (const char* rounds : {"fused", "separate"}) {
      DeviceTraits forced = d;
      forced.forced = parse_overrides(std::string("block_rounds=") + rounds).value();
      const bool fused = rounds == std::string("fused");
      for (const uint32_t block : {64u, 128u}) {
        CHECK(block_attention_forward(forced, {.block = block, .dk = 128, .dv = 128}).fused_rounds == fused);
        CHECK(block_attention_backward(forced, {.block = block, .dk = 128, .dv = 128}).fused_rounds == fused);
      }
    }
    CHECK_FALSE(parse_overrides("block_rounds=both").is_ok());
    DeviceTraits narrow = d;  // a chosen workgroup, never past the device's limit
    narrow.forced = parse_overrides("block_workgroup=128").value();
    CHECK(block_attention_forward(narrow, {.block = 64}).workgroup == 128);
    CHECK(block_attention_backward(narrow, {.block = 128}).workgroup == 128);
    CHECK(block_attention_forward(d, {.block = 64}).workgroup == 256);
    narrow.max_invocations = 64;
    CHECK(block_attention_forward(narrow, {.block = 128}).workgroup <= 64);
  }
  for (const auto& s : {la_shape(4, 16384, 64), la_shape(8, 1 << 20, 32), la_shape(4, 1 << 20, 64)}) {
    const auto la = linear_attention_forward(d, s);
    REQUIRE(la.is_ok());
    CHECK(la.value().algorithm == LinearAttentionAlgorithm::kChunkedParallel);
    // The window's chunk states stay within the scratch budget, and the window is whole chunks.
    CHECK(uint64_t(la.value().chunks_per_dispatch) * s.heads * s.dk * s.dv * 4 <= 64ull << 20);
    CHECK(la.value().chunks_per_dispatch <= (s.n + s.chunk - 1) / s.chunk);
  }
  // A short sequence is one window.
  CHECK(linear_attention_forward(d, la_shape(4, 4096, 64)).value().chunks_per_dispatch == 64);
  // Non-causal attention and the backward are parallel over chunks too.
  CHECK(linear_attention_noncausal(d, la_shape(4, 1 << 20, 64)).value().algorithm ==
        LinearAttentionAlgorithm::kChunkedParallel);
  CHECK(linear_attention_backward(d, la_shape(8, 1 << 20, 32)).value().algorithm ==
        LinearAttentionAlgorithm::kChunkedParallel);
}

TEST_CASE("kernel plan: a phone-class GPU fits its limits", "[plan]") {
  const DeviceTraits d = mali_like();
  CHECK(reduction_workgroup(d) == 256);
  CHECK(block_attention_forward(d, {.block = 32}).tiled);
  CHECK_FALSE(block_attention_forward(d, {.block = 64}).tiled);  // 64 x 64 scores fill 16 KiB on their own
  CHECK(block_attention_backward(d, {.block = 32, .dk = 64, .dv = 64}).tiled);
  CHECK_FALSE(block_attention_backward(d, {.block = 64}).tiled);
  auto la = linear_attention_forward(d, la_shape(8, 65536, 32, 32));
  REQUIRE(la.is_ok());
  CHECK(la.value().algorithm == LinearAttentionAlgorithm::kChunkedParallel);
  CHECK(la.value().workgroup == 256);
  // 64 x 64 scores (and their decay powers) exceed 16 KiB of shared memory: still parallel over
  // chunks, of 32 rows (the same result, twice the chunks to scan).
  la = linear_attention_forward(d, la_shape(8, 65536, 32, 64));
  REQUIRE(la.is_ok());
  CHECK(la.value().algorithm == LinearAttentionAlgorithm::kChunkedParallel);
  CHECK(la.value().chunk == 32);
  CHECK(la.value().tile == 8);  // the plan's tile at the shorter chunk (tiles of 4 at 64 rows did not fit)
  // Forced serial, 64-row chunks run in short dispatches for the watchdog.
  DeviceTraits serial = d;
  serial.forced.linear_attention = LinearAttentionAlgorithm::kChunkedSerial;
  la = linear_attention_forward(serial, la_shape(8, 65536, 32, 64));
  REQUIRE(la.is_ok());
  CHECK(la.value().algorithm == LinearAttentionAlgorithm::kChunkedSerial);
  CHECK(la.value().chunks_per_dispatch == 16);
}

TEST_CASE("kernel plan: forced algorithms win, or are refused with a reason", "[plan]") {
  DeviceTraits d = lavapipe_like();
  d.forced.linear_attention = LinearAttentionAlgorithm::kChunkedParallel;
  CHECK(linear_attention_forward(d, la_shape(2, 1000, 16)).value().algorithm ==
        LinearAttentionAlgorithm::kChunkedParallel);
  d.forced.linear_attention = LinearAttentionAlgorithm::kChunkedSerial;
  CHECK(linear_attention_forward(d, la_shape(2, 1000, 16)).value().algorithm ==
        LinearAttentionAlgorithm::kChunkedSerial);
  DeviceTraits g = h100_like();
  g.forced.linear_attention = LinearAttentionAlgorithm::kRegisterScan;
  CHECK(linear_attention_forward(g, la_shape(2, 1000, 16)).value().algorithm ==
        LinearAttentionAlgorithm::kRegisterScan);
  CHECK(linear_attention_noncausal(g, la_shape(2, 1000, 16)).value().algorithm ==
        LinearAttentionAlgorithm::kRegisterScan);
  CHECK(linear_attention_backward(g, la_shape(2, 1000, 16)).value().algorithm ==
        LinearAttentionAlgorithm::kRegisterScan);
  CHECK(linear_attention_backward(g, {.heads = 2, .n = 1000, .dk = 16, .dv = 264, .chunk = 64}).status().code() ==
        rill::StatusCode::kInvalidArgument);  // the forced scan cannot hold a 264-wide gradient state
  const auto too_wide = linear_attention_forward(g, la_shape(2, 1000, 264));
  REQUIRE_FALSE(too_wide.is_ok());
  CHECK(too_wide.status().code() == rill::StatusCode::kInvalidArgument);
  // A GPU whose driver may run a workgroup as narrower subgroups (no fixed width): the scan's
  // shuffles would cross the wrong lanes, so it is refused, and the CPU family's register kernels
  // are not planned there.
  DeviceTraits varying = g;
  varying.fixed_subgroup = false;
  const auto unfixed = linear_attention_forward(varying, la_shape(2, 1000, 16));
  REQUIRE_FALSE(unfixed.is_ok());
  CHECK(unfixed.status().message().find("fixed 4 or more lanes") != std::string::npos);
  varying.forced.linear_attention.reset();
  varying.family = rill::ops::plan::Family::kCpu;
  CHECK(linear_attention_forward(varying, la_shape(2, 1000, 16)).value().algorithm !=
        LinearAttentionAlgorithm::kRegisterScan);
  g.forced.linear_attention = LinearAttentionAlgorithm::kChunkedParallel;
  g.shared_bytes = 512;  // 8-row chunks with tiles of 4 take about 0.9 KiB at heads of 16
  CHECK(linear_attention_forward(g, la_shape(2, 1000, 16)).status().code() == rill::StatusCode::kInvalidArgument);
  g.shared_bytes = 1024;
  CHECK(linear_attention_forward(g, la_shape(2, 1000, 16)).value().chunk == 8);
}

TEST_CASE("kernel plan: overrides parse, and bad ones are named", "[plan]") {
  CHECK_FALSE(parse_overrides("").value().linear_attention.has_value());
  CHECK(parse_overrides("linear_attention=serial").value().linear_attention ==
        LinearAttentionAlgorithm::kChunkedSerial);
  CHECK(parse_overrides("linear_attention=scan,").value().linear_attention == LinearAttentionAlgorithm::kRegisterScan);
  const auto bad_key = parse_overrides("matmul=gpu");
  REQUIRE_FALSE(bad_key.is_ok());
  CHECK(bad_key.status().message().find("matmul") != std::string::npos);
  const auto bad_value = parse_overrides("linear_attention=fast");
  REQUIRE_FALSE(bad_value.is_ok());
  CHECK(bad_value.status().message().find("fast") != std::string::npos);
}

TEST_CASE("kernel plan: every listed key parses its values and refuses others by name", "[plan]") {
  // One valid value per key: a key added to the table without one here fails this test.
  const std::map<std::string, std::string> example = {{"linear_attention", "parallel"},
                                                      {"la_tile", "16"},
                                                      {"la_scan_groups", "8"},
                                                      {"la_window", "256"},
                                                      {"la_span", "4"},
                                                      {"la_chunk", "32"},
                                                      {"la_columns", "grouped"},
                                                      {"la_scores", "fused"},
                                                      {"la_rows", "paired"},
                                                      {"block_tile", "8"},
                                                      {"block_rounds", "fused"},
                                                      {"block_workgroup", "128"},
                                                      {"block_keys", "4"},
                                                      {"block_texel", "off"},
                                                      {"block_dq", "rows"},
                                                      {"matmul_texel", "off"},
                                                      {"matmul_tile", "8x4"},
                                                      {"matmul_layout", "grouped"},
                                                      {"matmul_depth", "32"},
                                                      {"matmul_buffers", "2"},
                                                      {"matmul_splits", "3"},
                                                      {"matmul_coop", "emulated"},
                                                      {"matmul_coop_buffers", "1"},
                                                      {"matmul_coop_depth", "64"},
                                                      {"matmul_coop_groups", "4x2"},
                                                      {"rmsnorm_texel", "off"},
                                                      {"elementwise_texel", "on"},
                                                      {"icl_layers", "per-workgroup"},
                                                      {"icl_tasks_per_workgroup", "2"},
                                                      {"icl_block", "3"},
                                                      {"icl_layers_per_dispatch", "3"},
                                                      {"icl_top_layer", "full"},
                                                      {"icl_texel", "off"},
                                                      {"lm_decode", "per-op"},
                                                      {"lm_decode_grid", "512x32"},
                                                      {"lm_decode_columns", "8"},
                                                      {"lm_decode_rows", "2"},
                                                      {"wait_spin_us", "off"},
                                                      {"lm_decode_weights", "buffer"},
                                                      {"lm_decode_shuffle", "off"}};
  const std::vector<rill::KernelPlanKey> keys = rill::kernel_plan_keys();
  std::set<std::string> listed;
  for (const auto& k : keys) {
    INFO(k.key);
    CHECK(listed.insert(k.key).second);  // listed once
    CHECK_FALSE(k.values.empty());
    CHECK_FALSE(k.chooses.empty());
    CHECK(tunable_key(k.key) == k.tunable);
    REQUIRE(example.count(k.key) == 1);
    const auto parsed = parse_overrides(k.key + "=" + example.at(k.key));
    CHECK(parsed.is_ok());
    for (const char* bad : {"", "0", "7x7", "maybe", "99999"}) {
      const auto refused = parse_overrides(k.key + "=" + bad);
      REQUIRE_FALSE(refused.is_ok());
      CHECK(refused.status().message() == "kernel plan: " + k.key + " is '" + bad + "'; use " + k.values);
    }
  }
  CHECK(listed.size() == example.size());
  // Two keys in one plan keep both (each key's effect on its plan is tested with that plan).
  CHECK(parse_overrides("la_tile=16,la_span=4").value().la_tile == 16u);
  CHECK(parse_overrides("la_tile=16,la_span=4").value().la_span == 4u);
  // A key given twice is refused (the last one silently won); over a base, the text's keys win.
  const auto twice = parse_overrides("la_tile=8,la_span=4,la_tile=32");
  REQUIRE_FALSE(twice.is_ok());
  CHECK(twice.status().message().find("la_tile is given twice") != std::string::npos);
  const auto layered = parse_overrides("la_tile=32", parse_overrides("la_tile=8,la_span=4").value());
  REQUIRE(layered.is_ok());
  CHECK(layered->la_tile == 32u);
  CHECK(layered->la_span == 4u);
  const auto unknown = parse_overrides("la_tiles=8");
  REQUIRE_FALSE(unknown.is_ok());
  for (const auto& k : keys) CHECK(unknown.status().message().find(k.key) != std::string::npos);
}

TEST_CASE("kernel plan: the loop budget bounds one chunk of the serial kernel", "[plan]") {
  DeviceTraits d = lavapipe_like();
  const auto wide = linear_attention_serial(d, la_shape(1, 4096, 256));  // LRPE's doubled heads
  REQUIRE(wide.is_ok());
  CHECK(wide->chunk < 64);  // halved until one chunk fits
  CHECK(wide->chunk >= 8);
  d.loop_budget = 1000;
  const auto r = linear_attention_serial(d, la_shape(1, 4096, 64));
  REQUIRE(r.is_ok());
  CHECK(r->chunk < 8);
  d.loop_budget = 100;  // not even one position
  const auto none = linear_attention_serial(d, la_shape(1, 4096, 64));
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.status().code() == rill::StatusCode::kOutOfRange);
  CHECK(none.status().message().find("one position") != std::string::npos);
  // A caller's bound past the chunks there are gives the chunks there are (the backward's count of
  // ranges, (chunks + per - 1) / per, wrapped to 0 at UINT32_MAX and recorded nothing).
  LinearAttentionShape any_bound = la_shape(1, 200, 64);
  any_bound.chunks_per_dispatch = UINT32_MAX;
  const auto bounded = linear_attention_serial(h100_like(), any_bound);
  REQUIRE(bounded.is_ok());
  CHECK(bounded->chunks_per_dispatch == 4);
}

TEST_CASE("kernel plan: every device gets a summary line per op", "[plan]") {
  for (const DeviceTraits& d : {lavapipe_like(), h100_like(), mali_like()}) {
    const auto lines = summarize(d);
    CHECK(lines.size() >= 8);
    for (const auto& l : lines) CHECK_FALSE(l.plan.empty());
    const auto backward = std::find_if(lines.begin(), lines.end(),
                                       [](const PlanSummary& l) { return l.op == "linear_attention_backward"; });
    REQUIRE(backward != lines.end());
    CHECK(backward->plan.find(d.family == Family::kCpu ? "scan" : "parallel") != std::string::npos);
  }
}

TEST_CASE("kernel plan: RMSNorm's dgain is summed in row blocks that fit the grid and the loop budget", "[plan]") {
  const auto gpu = rmsnorm_backward_gain(h100_like(), 16384, 1024).value();
  CHECK(gpu.rows_per_block == 128);
  CHECK(gpu.blocks == 128);
  CHECK(rmsnorm_backward_gain(h100_like(), 100, 16384).value().blocks == 1);
  // Few rows of few columns: blocks down to 8 rows until about 256 workgroups (64 x 8192 in vectors
  // of 4: 32 column groups, 8 blocks); never fewer than 8 rows per block.
  const auto thin = rmsnorm_backward_gain(h100_like(), 64, 2048).value();
  CHECK(thin.rows_per_block == 8);
  CHECK(thin.blocks == 8);
  CHECK(rmsnorm_backward_gain(h100_like(), 5, 2048).value().blocks == 1);
  CHECK(rmsnorm_backward_gain(lavapipe_like(), 64, 2048).value().blocks == 1);  // CPU drivers: long blocks
  const auto cpu = rmsnorm_backward_gain(lavapipe_like(), 1u << 24, 4096).value();
  CHECK(uint64_t(cpu.rows_per_block) * cpu.blocks >= (1u << 24));
  CHECK(cpu.rows_per_block <= lavapipe_like().loop_budget);
  CHECK(cpu.blocks <= lavapipe_like().loop_budget);
  CHECK(cpu.blocks <= 65535);
  DeviceTraits tight = lavapipe_like();
  tight.loop_budget = 100;
  CHECK(rmsnorm_backward_gain(tight, 20000, 4096).status().code() == rill::StatusCode::kOutOfRange);
  // The blocks' sum: a column per invocation on CPU drivers; on GPUs slices of at least 8 blocks.
  CHECK(rmsnorm_gain_sum(lavapipe_like(), 256).slices == 1);
  CHECK(rmsnorm_gain_sum(h100_like(), 512).slices == 32);
  CHECK(rmsnorm_gain_sum(h100_like(), 512).workgroup == 256);
  CHECK(rmsnorm_gain_sum(h100_like(), 40).slices == 4);
  CHECK(rmsnorm_gain_sum(h100_like(), 15).slices == 1);
}

TEST_CASE("kernel plan: GPUs keep narrow RMSNorm rows in registers where subgroups are fixed", "[plan]") {
  const DeviceTraits d = h100_like();
  const RmsnormPlan fwd = rmsnorm_forward(d, 256);
  CHECK(fwd.register_kernel);
  CHECK(fwd.workgroup == 32);
  CHECK(fwd.subgroups == 8);
  CHECK(fwd.rows_per_group == 4);
  CHECK(fwd.vector_width == 4);
  CHECK_FALSE(rmsnorm_forward(d, 1025).register_kernel);  // wider rows: the generic kernel
  const auto bwd = rmsnorm_backward(d, 16384, 256);
  REQUIRE(bwd.has_value());
  CHECK(bwd->subgroups == 8);
  CHECK(bwd->rows_per_block == 32);
  CHECK(bwd->blocks == 512);
  // 1024-wide rows: 8 subgroups' dgain sums need 32 KiB; a 16 KiB device halves the subgroups.
  DeviceTraits small = d;
  small.shared_bytes = 16384;
  CHECK(rmsnorm_backward(small, 64, 1024)->subgroups == 4);
  // Rows of up to 32 elements per lane, and 1024 at most: a 16-lane Mali's up to 512, lavapipe's
  // forced GPU family's (8 lanes) up to 256, AMD's and Adreno's 64 and 128 lanes still 1024.
  for (const uint32_t lanes : {4u, 8u, 16u, 64u, 128u}) {
    DeviceTraits other = d;
    other.subgroup = lanes;
    INFO("subgroup " << lanes);
    const uint32_t widest = std::min(1024u, 32u * lanes);
    const RmsnormPlan widest_plan = rmsnorm_forward(other, widest);
    CHECK(widest_plan.register_kernel);
    CHECK(widest_plan.workgroup <= other.max_invocations);
    CHECK_FALSE(rmsnorm_forward(other, widest + 1).register_kernel);
    CHECK(rmsnorm_backward(other, 64, widest).has_value());
    CHECK_FALSE(rmsnorm_backward(other, 64, widest + 1).has_value());
  }
  // A driver that may vary the subgroup size (Intel's) keeps the generic kernels.
  DeviceTraits varying = d;
  varying.fixed_subgroup = false;
  CHECK_FALSE(rmsnorm_forward(varying, 256).register_kernel);
  CHECK_FALSE(rmsnorm_backward(varying, 16384, 256).has_value());
  // CPU drivers as before: one subgroup per workgroup.
  CHECK(rmsnorm_forward(lavapipe_like(), 256).subgroups == 1);
  CHECK(rmsnorm_backward(lavapipe_like(), 16384, 256)->subgroups == 1);
}

TEST_CASE("launch grids spread over y and never wrap to a smaller grid", "[plan]") {
  using rill::ops::detail::groups_for;
  CHECK(groups_for(100, 64) == std::array<uint32_t, 3>{2, 1, 1});
  CHECK(groups_for(65535ull * 64 * 3, 64) == std::array<uint32_t, 3>{65535, 3, 1});
  // 2^50 groups: y saturates, which every dispatch refuses (past any device's workgroup count).
  CHECK(groups_for(uint64_t(1) << 50, 1) == std::array<uint32_t, 3>{65535, UINT32_MAX, 1});
}

namespace {
// The language model's GLU projection: 2048 tokens x 256 -> 512, f32.
MatmulShape lm_projection_f32() { return {.m = 2048, .n = 512, .k = 256, .rows_vectorizable = true}; }
}  // namespace

TEST_CASE("kernel plan: the CPU matmul reads untransposed rows as texels where K fills its blocks", "[plan]") {
  const MatmulShape lm_projection = lm_projection_f32();
  CHECK(matmul(lavapipe_like(), lm_projection).texel_rows);
  MatmulShape f16 = lm_projection;
  f16.f16 = true;
  CHECK(matmul(lavapipe_like(), f16).texel_rows);
  DeviceTraits no_f16 = lavapipe_like();
  no_f16.texel_f16x4 = false;
  CHECK_FALSE(matmul(no_f16, f16).texel_rows);
  MatmulShape transposed = lm_projection;
  transposed.rows_vectorizable = false;  // a transposed operand: its rows are not contiguous
  CHECK_FALSE(matmul(lavapipe_like(), transposed).texel_rows);
  MatmulShape short_k = lm_projection;
  short_k.k = 40;  // not a multiple of 4 subgroups of 8 k steps
  CHECK_FALSE(matmul(lavapipe_like(), short_k).texel_rows);
  DeviceTraits off = lavapipe_like();
  off.forced = parse_overrides("matmul_texel=off").value();
  CHECK_FALSE(matmul(off, lm_projection).texel_rows);
  CHECK_FALSE(parse_overrides("matmul_texel=yes").is_ok());
  CHECK_FALSE(matmul(h100_like(), lm_projection).texel_rows);  // GPUs: the shared-memory kernel
  // Under a loop limit the texel form counts its 5 iterations per block of 4 subgroups of K (1.25 K
  // / SG): a K the plain register form fits in (K / SG + SG + 8 iterations) but it does not.
  DeviceTraits limited = lavapipe_like();
  MatmulShape deep = lm_projection;
  deep.k = 32 * 27;  // 27 blocks: 135 + 16 texel iterations against 108 + 16
  limited.loop_budget = 140;
  const MatmulPlan plain = matmul(limited, deep);
  CHECK(plain.register_kernel);
  CHECK_FALSE(plain.texel_rows);
  CHECK(plain.inner_loops <= limited.loop_budget);
  limited.loop_budget = 160;
  const MatmulPlan texels = matmul(limited, deep);
  CHECK(texels.texel_rows);
  CHECK(texels.inner_loops == 27 * 5 + 16);
}

TEST_CASE("kernel plan: a decoding step's packed matvec counts its loops and leaves long K to the tiled kernels",
          "[plan]") {
  const DeviceTraits d = lavapipe_like();  // a loop limit of 7/8 of 65535
  // f16 weights have no scales: K loops (counted twice before, refusing K = 32768).
  const auto f16 = packed_matvec(d, 1, 32768, 0);
  REQUIRE(f16.has_value());
  CHECK(f16->inner_loops == 32768 + 8);
  // int8 in groups of 64: K plus a scale step per group; past the limit, no matvec (the tiled
  // kernels take the shape instead of the op refusing it).
  CHECK(packed_matvec(d, 1, 32768, 64)->inner_loops == 32768 + 512 + 8);
  CHECK_FALSE(packed_matvec(d, 1, 60000, 64).has_value());
  CHECK(packed_matvec(h100_like(), 1, 1 << 20, 64).has_value());  // no loop limit
}

TEST_CASE("kernel plan: the CPU matmul reads packed weights as texels of words where a lane's columns allow",
          "[plan]") {
  // The LM's GLU projection with int8 weights in groups of 64 rows, and with f16 weights.
  const MatmulShape int8{
      .m = 2048, .n = 512, .k = 256, .rows_vectorizable = true, .packed_per_word = 4, .packed_group = 64};
  CHECK(matmul(lavapipe_like(), int8).texel_rows);
  MatmulShape f16_words = int8;
  f16_words.packed_per_word = 2;
  f16_words.packed_group = 0;
  CHECK(matmul(lavapipe_like(), f16_words).texel_rows);
  MatmulShape whole_rows = int8;
  whole_rows.packed_group = 256;  // one group: every k block has the same scales
  CHECK(matmul(lavapipe_like(), whole_rows).texel_rows);
  MatmulShape split_blocks = int8;
  split_blocks.packed_group = 16;  // scales change within a block of 4 x 8 k steps
  CHECK_FALSE(matmul(lavapipe_like(), split_blocks).texel_rows);
  MatmulShape narrow = int8;
  narrow.n = 32;  // 4 columns per lane: one int8 word, a quarter texel
  CHECK(matmul(lavapipe_like(), narrow).tn == 4);
  CHECK_FALSE(matmul(lavapipe_like(), narrow).texel_rows);
  narrow.packed_per_word = 2;  // the same 4 f16 columns: two words, half a texel
  CHECK(matmul(lavapipe_like(), narrow).texel_rows);
  MatmulShape odd_words = int8;
  odd_words.n = 520;  // 130 words per row: rows do not start texels
  CHECK_FALSE(matmul(lavapipe_like(), odd_words).texel_rows);
  DeviceTraits no_words = lavapipe_like();
  no_words.texel_u32x4 = false;
  CHECK_FALSE(matmul(no_words, int8).texel_rows);
  CHECK(matmul(no_words, lm_projection_f32()).texel_rows);  // a dense B needs no word texels
  DeviceTraits off = lavapipe_like();
  off.forced = parse_overrides("matmul_texel=off").value();
  CHECK_FALSE(matmul(off, int8).texel_rows);
  // Cooperative matrices never take a packed B, whatever the device has.
  MatmulShape f16_activations = f16_words;
  f16_activations.f16 = true;
  DeviceTraits coop = h100_like();
  coop.cooperative_matrix_f16 = {16, 16, 16};
  CHECK_FALSE(cooperative_matmul(coop, f16_activations).has_value());
}

TEST_CASE("kernel plan: the CPU block-attention kernels read whole 4-element rows as texels", "[plan]") {
  const BlockAttentionShape heads{.block = 64, .dk = 64, .dv = 32, .rows = 4 * 4096};
  CHECK(block_attention_forward(lavapipe_like(), heads).texel_rows);
  CHECK(block_attention_backward(lavapipe_like(), heads).texel_rows);
  CHECK(block_attention_forward(lavapipe_like(), heads).keys_per_step == 2);
  BlockAttentionShape odd = heads;
  odd.dv = 6;  // rows of 1.5 texels
  CHECK_FALSE(block_attention_forward(lavapipe_like(), odd).texel_rows);
  BlockAttentionShape f16 = heads;
  f16.f16 = true;
  DeviceTraits no_f16 = lavapipe_like();
  no_f16.texel_f16x4 = false;
  CHECK(block_attention_forward(lavapipe_like(), f16).texel_rows);
  CHECK_FALSE(block_attention_forward(no_f16, f16).texel_rows);
  CHECK(block_attention_forward(no_f16, heads).texel_rows);
  DeviceTraits small = lavapipe_like();
  small.max_texels = 4 * 4096 * 64 / 4 - 1;  // q's view one texel too many
  CHECK_FALSE(block_attention_forward(small, heads).texel_rows);
  DeviceTraits few = lavapipe_like();
  few.max_texel_bindings = 4;  // the forward's three views fit, the backward's five do not
  CHECK(block_attention_forward(few, heads).texel_rows);
  CHECK_FALSE(block_attention_backward(few, heads).texel_rows);
  DeviceTraits off = lavapipe_like();
  off.forced = parse_overrides("block_texel=off,block_keys=4").value();
  CHECK_FALSE(block_attention_forward(off, heads).texel_rows);
  CHECK_FALSE(block_attention_backward(off, heads).texel_rows);
  CHECK(block_attention_forward(off, heads).keys_per_step == 4);
  CHECK_FALSE(parse_overrides("block_keys=3").is_ok());
  CHECK_FALSE(parse_overrides("block_texel=1").is_ok());
  CHECK_FALSE(block_attention_forward(h100_like(), heads).texel_rows);  // GPUs: the tiled kernels
}

TEST_CASE("kernel plan: the CPU RMSNorm kernels read whole 4-element rows as texels", "[plan]") {
  const DeviceTraits d = lavapipe_like();
  CHECK(rmsnorm_forward(d, 256, 16384).texel_rows);                // register kernel
  CHECK(rmsnorm_forward(d, 8192, 64).texel_rows);                  // generic kernel
  CHECK(rmsnorm_forward(d, 256, 16384, /*f16=*/true).texel_rows);  // f16 texels read as f32
  CHECK(rmsnorm_backward(d, 16384, 256).value().texel_rows);
  CHECK(rmsnorm_texel_rows(d, 8192, 64, false, 3));        // the generic backward's x, gain, dy
  CHECK_FALSE(rmsnorm_forward(d, 258, 16384).texel_rows);  // rows of 64.5 texels
  CHECK_FALSE(rmsnorm_forward(d, 256).texel_rows);         // rows unknown: the views' size too
  DeviceTraits no_f16 = d;
  no_f16.texel_f16x4 = false;
  CHECK_FALSE(rmsnorm_forward(no_f16, 256, 16384, true).texel_rows);
  CHECK(rmsnorm_forward(no_f16, 256, 16384).texel_rows);
  DeviceTraits small = d;
  small.max_texels = 16384 * 256 / 4 - 1;  // x's view one texel too many
  CHECK_FALSE(rmsnorm_forward(small, 256, 16384).texel_rows);
  CHECK(rmsnorm_forward(small, 256, 16383).texel_rows);
  DeviceTraits few = d;
  few.max_texel_bindings = 2;  // the forward's x and gain fit; the residual's three, the backward's three do not
  CHECK(rmsnorm_forward(few, 256, 64).texel_rows);
  CHECK_FALSE(rmsnorm_forward(few, 256, 64, false, /*residual=*/true).texel_rows);
  CHECK_FALSE(rmsnorm_backward(few, 64, 256).value().texel_rows);
  DeviceTraits no_subgroups = d;
  no_subgroups.subgroup_arithmetic = false;  // the `_nosubgroup` kernels have no texel form
  CHECK_FALSE(rmsnorm_forward(no_subgroups, 8192, 64).texel_rows);
  DeviceTraits off = d;
  off.forced = parse_overrides("rmsnorm_texel=off").value();
  CHECK_FALSE(rmsnorm_forward(off, 256, 16384).texel_rows);
  CHECK_FALSE(rmsnorm_backward(off, 16384, 256).value().texel_rows);
  CHECK_FALSE(rmsnorm_texel_rows(off, 8192, 64, false, 3));
  // A tuning file's choice counts too (it was read and ignored), a forced one over it.
  DeviceTraits tuned_off = d;
  tuned_off.tuned = parse_overrides("rmsnorm_texel=off").value();
  CHECK_FALSE(rmsnorm_texel_rows(tuned_off, 8192, 64, false, 3));
  tuned_off.tuned = parse_overrides("rmsnorm_texel=on", parse_overrides("rmsnorm_texel=off").value()).value();
  CHECK(rmsnorm_texel_rows(tuned_off, 8192, 64, false, 3));
  CHECK_FALSE(parse_overrides("rmsnorm_texel=yes").is_ok());
  CHECK_FALSE(rmsnorm_forward(h100_like(), 256, 16384).texel_rows);  // GPUs: storage buffers
  CHECK_FALSE(rmsnorm_forward(h100_like(), 8192, 64).texel_rows);
}

TEST_CASE("kernel plan: the CPU elementwise kernels take 4 elements per invocation as texels", "[plan]") {
  const DeviceTraits d = lavapipe_like();
  CHECK(elementwise_texels(d, 1000, false, 2));
  CHECK(elementwise_texels(d, 1000, true, 3));
  CHECK_FALSE(elementwise_texels(d, 1001, false, 2));  // not whole texels
  CHECK_FALSE(elementwise_texels(d, 0, false, 2));
  DeviceTraits no_f16 = d;
  no_f16.texel_f16x4 = false;
  CHECK_FALSE(elementwise_texels(no_f16, 1000, true, 2));
  DeviceTraits small = d;
  small.max_texels = 249;  // 1000 elements are 250 texels
  CHECK_FALSE(elementwise_texels(small, 1000, false, 2));
  DeviceTraits few = d;
  few.max_texel_bindings = 2;
  CHECK_FALSE(elementwise_texels(few, 1000, false, 3));
  DeviceTraits off = d;
  off.forced = parse_overrides("elementwise_texel=off").value();
  CHECK_FALSE(elementwise_texels(off, 1000, false, 2));
  DeviceTraits tuned_off = d;
  tuned_off.tuned = parse_overrides("elementwise_texel=off").value();
  CHECK_FALSE(elementwise_texels(tuned_off, 1000, false, 2));
  CHECK_FALSE(parse_overrides("elementwise_texel=maybe").is_ok());
  CHECK_FALSE(elementwise_texels(h100_like(), 1000, false, 2));  // GPUs: storage buffers
}

TEST_CASE("kernel plan: the CPU block-attention backward takes dq from the key groups' dS", "[plan]") {
  // 4 heads of 64 over 4K positions: 64 blocks whose dS (64 x 64 per head) fit the scratch at once.
  const BlockAttentionShape heads{.block = 64, .dk = 64, .dv = 64, .rows = 4 * 4096, .heads = 4};
  const BlockAttentionBackwardPlan p = block_attention_backward(lavapipe_like(), heads);
  CHECK(p.dq_from_scores);
  CHECK(p.scores_width == 64);
  CHECK(p.scores_blocks == 64);
  CHECK(p.scores_texels);  // dq = dS K reads dS as texels, with the rows
  DeviceTraits five = lavapipe_like();
  five.max_texel_bindings = 5;  // the rows' five views fit, dS's sixth does not
  CHECK(block_attention_backward(five, heads).texel_rows);
  CHECK_FALSE(block_attention_backward(five, heads).scores_texels);
  DeviceTraits no_texels = lavapipe_like();
  no_texels.forced = parse_overrides("block_texel=off").value();
  CHECK(block_attention_backward(no_texels, heads).dq_from_scores);
  CHECK_FALSE(block_attention_backward(no_texels, heads).scores_texels);
  // A block of 7 rows: one row group of 8 lanes, dS padded to 8 x 8.
  CHECK(
      block_attention_backward(lavapipe_like(), {.block = 7, .dk = 8, .dv = 8, .rows = 70, .heads = 1}).scores_width ==
      8);
  // A long sequence: windows of the blocks whose dS fit 16 MiB.
  BlockAttentionShape longer = heads;
  longer.rows = 4 * (1 << 20);
  CHECK(block_attention_backward(lavapipe_like(), longer).scores_blocks == 256);
  // So many heads that one block's dS outgrows the scratch: the query groups.
  BlockAttentionShape many = heads;
  many.heads = 2048;
  many.rows = 2048 * 4096;
  CHECK_FALSE(block_attention_backward(lavapipe_like(), many).dq_from_scores);
  DeviceTraits rows = lavapipe_like();
  rows.forced = parse_overrides("block_dq=rows").value();
  CHECK_FALSE(block_attention_backward(rows, heads).dq_from_scores);
  CHECK_FALSE(block_attention_backward(rows, heads).scores_texels);
  DeviceTraits tuned_rows = lavapipe_like();  // from a tuning file (it was read and ignored)
  tuned_rows.tuned = parse_overrides("block_dq=rows,block_texel=off").value();
  CHECK_FALSE(block_attention_backward(tuned_rows, heads).dq_from_scores);
  CHECK_FALSE(block_attention_backward(tuned_rows, heads).texel_rows);
  CHECK_FALSE(parse_overrides("block_dq=keys").is_ok());
  CHECK_FALSE(block_attention_backward(h100_like(), heads).dq_from_scores);  // GPUs: the tiled kernel
}

TEST_CASE("kernel plan: a forced tile depth for the parallel linear-attention passes", "[plan]") {
  DeviceTraits gpu = h100_like();
  gpu.forced = parse_overrides("la_tile=32").value();
  const auto p = linear_attention_forward(gpu, la_shape(4, 16384, 64)).value();
  CHECK(p.algorithm == LinearAttentionAlgorithm::kChunkedParallel);
  CHECK(p.tile == 32);  // the output pass's arrays, in rows of the heads' width, fit 48 KiB
  CHECK(p.fused_scores);
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 16384, 64)).value().tile == 8);  // the default
  // The state scan's runs: about sqrt of the window's chunks (256 chunks of 64 at 16K), 32 at most.
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 16384, 64)).value().scan_groups == 16);
  // At 1M positions the states pass walks spans of 2 chunks (341 workgroups per head of the 682
  // chunks' window), so the scan walks 341 spans: 16 runs.
  const auto million = linear_attention_forward(h100_like(), la_shape(4, 1 << 20, 64)).value();
  CHECK(million.span == 2);
  CHECK(million.scan_groups == 16);
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 16384, 64)).value().span == 1);  // 1,024 workgroups
  CHECK(linear_attention_forward(h100_like(), la_shape(8, 65536, 32)).value().span == 4);  // the LM's heads
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 64, 64)).value().scan_groups == 1);
  DeviceTraits phone = mali_like();
  phone.forced = parse_overrides("la_tile=32").value();
  const auto refused = linear_attention_forward(phone, la_shape(4, 16384, 64));
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("tiles of 32") != std::string::npos);
  // A tuned form sets nothing forced aside: the forced tile is refused as without a tuning file (a
  // tuned serial form, which has no tiles, took it silently), and one that fits is kept.
  phone.tuned = parse_overrides("la_tile=32", parse_overrides("linear_attention=serial").value()).value();
  CHECK_FALSE(linear_attention_forward(phone, la_shape(4, 16384, 64)).is_ok());
  CHECK_FALSE(linear_attention_backward(phone, la_shape(4, 16384, 64)).is_ok());
  gpu.tuned = parse_overrides("la_tile=32", parse_overrides("linear_attention=serial").value()).value();
  CHECK(linear_attention_forward(gpu, la_shape(4, 16384, 64)).value().tile == 32);
  DeviceTraits tuned_only = h100_like();  // without a forced choice the tuned form is taken
  tuned_only.tuned = parse_overrides("linear_attention=serial").value();
  CHECK(linear_attention_forward(tuned_only, la_shape(4, 16384, 64)).value().algorithm ==
        LinearAttentionAlgorithm::kChunkedSerial);
  for (const char* bad : {"la_tile=3", "la_tile=64", "la_tile="}) CHECK_FALSE(parse_overrides(bad).is_ok());
  for (const char* bad : {"la_scan_groups=0", "la_scan_groups=3", "la_scan_groups=128"})
    CHECK_FALSE(parse_overrides(bad).is_ok());
  CHECK(parse_overrides("la_scan_groups=8").value().la_scan_groups == 8u);
  // A forced window: at 1M positions the plan's window holds 682 chunks and their 341 spans of 2 in
  // the 64 MiB scratch (64 KiB of states per chunk for 4 heads of 64); a forced one cuts it, a
  // larger one than the plan's changes nothing.
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 1 << 20, 64)).value().chunks_per_dispatch == 682);
  DeviceTraits windowed = h100_like();
  windowed.forced = parse_overrides("la_window=256").value();
  CHECK(linear_attention_forward(windowed, la_shape(4, 1 << 20, 64)).value().chunks_per_dispatch == 256);
  windowed.forced = parse_overrides("la_window=4096").value();
  CHECK(linear_attention_forward(windowed, la_shape(4, 1 << 20, 64)).value().chunks_per_dispatch == 682);
  // Without spans the whole scratch holds chunk states.
  windowed.forced = parse_overrides("la_span=1").value();
  CHECK(linear_attention_forward(windowed, la_shape(4, 1 << 20, 64)).value().chunks_per_dispatch == 1024);
  for (const char* bad : {"la_window=8", "la_window=100", "la_window=8192", "la_window="})
    CHECK_FALSE(parse_overrides(bad).is_ok());
  // A forced span, and the window cut to a whole number of spans (the windows' spans line up).
  DeviceTraits spanned = h100_like();
  spanned.forced = parse_overrides("la_span=8").value();
  LinearAttentionShape odd_window = la_shape(4, 1 << 20, 64);
  odd_window.chunks_per_dispatch = 1001;
  const auto eight = linear_attention_forward(spanned, odd_window).value();
  CHECK(eight.span == 8);
  CHECK(eight.chunks_per_dispatch == 904);  // 904 chunks and 113 spans of states fit 1,024
  for (const char* bad : {"la_span=0", "la_span=3", "la_span=128"}) CHECK_FALSE(parse_overrides(bad).is_ok());
  // The output pass's blocks over strided columns unless grouped ones are forced.
  CHECK_FALSE(linear_attention_forward(h100_like(), la_shape(4, 1 << 16, 64)).value().grouped_columns);
  DeviceTraits grouped = h100_like();
  grouped.forced = parse_overrides("la_columns=grouped").value();
  CHECK(linear_attention_forward(grouped, la_shape(4, 1 << 16, 64)).value().grouped_columns);
  // The scores fused into the state product's walk on GPUs unless forced apart, and only where a
  // chunk's scores and output blocks each fit one round of the workgroup (chunks of 64: 256 blocks
  // of scores; heads of 128: 512 output blocks, not fused); a CPU driver's forced parallel form
  // keeps them apart unless fusing is forced.
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 1 << 16, 64)).value().fused_scores);
  CHECK(linear_attention_forward(h100_like(), la_shape(8, 1 << 16, 32)).value().fused_scores);
  CHECK_FALSE(linear_attention_forward(h100_like(), la_shape(4, 1 << 16, 128)).value().fused_scores);
  DeviceTraits separate = h100_like();
  separate.forced = parse_overrides("la_scores=separate").value();
  CHECK_FALSE(linear_attention_forward(separate, la_shape(4, 1 << 16, 64)).value().fused_scores);
  // The 8 x 8 output blocks were removed (slower on an H200): their key is unknown now.
  for (const char* bad : {"la_block=8", "la_scores=yes", "la_rows=yes"}) CHECK_FALSE(parse_overrides(bad).is_ok());
  // Row-block pairs only where forced. With heads of 64 a chunk of 64 takes 8 pairs x 32 column
  // pairs (one round of 256: the scores stay fused) and its h(C) resident fits an H100's 48 KiB;
  // lavapipe's 32 KiB holds it for chunks of 32.
  CHECK_FALSE(linear_attention_forward(h100_like(), la_shape(4, 1 << 16, 64)).value().paired_rows);
  DeviceTraits pairs = h100_like();
  pairs.forced = parse_overrides("la_rows=paired").value();
  const auto paired = linear_attention_forward(pairs, la_shape(4, 1 << 16, 64)).value();
  CHECK(paired.paired_rows);
  CHECK(paired.chunk == 64);
  CHECK(paired.fused_scores);
  CHECK(linear_attention_backward(pairs, la_shape(4, 1 << 16, 64)).value().paired_rows);
  DeviceTraits cpu_pairs = lavapipe_like();
  cpu_pairs.forced = parse_overrides("linear_attention=parallel,la_rows=paired").value();
  const auto cpu_paired = linear_attention_forward(cpu_pairs, la_shape(4, 1 << 16, 64)).value();
  CHECK(cpu_paired.paired_rows);
  CHECK(cpu_paired.chunk == 32);
  const auto flat = linear_attention_noncausal(cpu_pairs, la_shape(4, 1 << 16, 64)).value();  // no causal product
  CHECK_FALSE(flat.paired_rows);
  CHECK(flat.chunk == 64);
  // On a CPU driver the forced parallel form keeps spans of 1 unless one is forced.
  DeviceTraits cpu = lavapipe_like();
  cpu.forced = parse_overrides("linear_attention=parallel").value();
  CHECK(linear_attention_forward(cpu, la_shape(4, 1 << 16, 64)).value().span == 1);
  CHECK_FALSE(linear_attention_forward(cpu, la_shape(4, 1 << 16, 64)).value().fused_scores);
  // The caller's chunk unless a shorter one is forced; then the output pass's workgroup has an
  // invocation per block of a chunk's scores or outputs (in warps of 32): the states pass's 256
  // for chunks of 64, fewer for shorter ones, which stay fused. Unforced it is the states pass's.
  for (const uint32_t dim : {64u, 32u}) {
    const auto plain = linear_attention_forward(h100_like(), la_shape(4, 1 << 16, dim)).value();
    CHECK(plain.chunk == 64);
    CHECK(plain.output_workgroup == 256);
    CHECK(plain.workgroup == 256);
  }
  DeviceTraits short_chunks = h100_like();
  short_chunks.forced = parse_overrides("la_chunk=32").value();
  const auto c32 = linear_attention_forward(short_chunks, la_shape(4, 1 << 16, 64)).value();
  CHECK(c32.chunk == 32);
  CHECK(c32.output_workgroup == 128);  // 8 x 16 output blocks (8 x 8 of scores)
  CHECK(c32.workgroup == 256);
  CHECK(c32.fused_scores);
  CHECK(linear_attention_forward(short_chunks, la_shape(8, 1 << 16, 32)).value().output_workgroup == 64);
  CHECK(linear_attention_forward(short_chunks, la_shape(4, 1 << 16, 64, 16)).value().chunk == 16);  // never longer
  CHECK(linear_attention_forward(h100_like(), la_shape(4, 1 << 16, 64, 16)).value().output_workgroup == 256);
  CHECK(linear_attention_backward(short_chunks, la_shape(4, 1 << 16, 64)).value().chunk == 32);
  short_chunks.forced = parse_overrides("la_chunk=8").value();
  CHECK(linear_attention_forward(short_chunks, la_shape(4, 1 << 16, 64)).value().output_workgroup == 32);
  for (const char* bad : {"la_chunk=0", "la_chunk=4", "la_chunk=12", "la_chunk=128", "la_chunk="})
    CHECK_FALSE(parse_overrides(bad).is_ok());
}

TEST_CASE("kernel plan: the GPU matmul takes 8 x 8 accumulators for big f32 products with a long K", "[plan]") {
  const DeviceTraits gpu = h100_like();
  const MatmulPlan small = matmul(gpu, {.m = 1024, .n = 1024, .k = 1024});  // 64 blocks of 128 x 128
  CHECK((small.tm == 4 && small.tn == 4));
  const MatmulPlan big = matmul(gpu, {.m = 4096, .n = 4096, .k = 4096});
  CHECK((big.tm == 8 && big.tn == 8 && big.wg_x == 16 && big.wg_y == 16));
  const MatmulPlan lm = matmul(gpu, {.m = 65536, .n = 256, .k = 512});  // the LM's down projection
  CHECK((lm.tm == 8 && lm.tn == 8));
  CHECK(matmul(gpu, {.m = 65536, .n = 512, .k = 256}).tm == 4);                // short K
  CHECK(matmul(gpu, {.m = 4096, .n = 4096, .k = 4096, .f16 = true}).tm == 4);  // f16 storage
  DeviceTraits forced = gpu;
  forced.forced = parse_overrides("matmul_tile=8x4").value();
  const MatmulPlan f = matmul(forced, {.m = 64, .n = 64, .k = 64});
  CHECK((f.tm == 8 && f.tn == 4));
  CHECK_FALSE(parse_overrides("matmul_tile=16x16").is_ok());
  CHECK(matmul(lavapipe_like(), {.m = 4096, .n = 4096, .k = 4096}).register_kernel);
  // Grouped accumulators (16-byte shared loads) on GPUs unless forced strided; a CPU driver's
  // shared-memory kernel (a K past its loop limit) stays strided.
  CHECK(big.grouped);
  CHECK(small.grouped);
  DeviceTraits strided = gpu;
  strided.forced = parse_overrides("matmul_layout=strided").value();
  CHECK_FALSE(matmul(strided, {.m = 4096, .n = 4096, .k = 4096}).grouped);
  DeviceTraits limited = lavapipe_like();
  limited.loop_budget = 1000;
  const MatmulPlan cpu_shared = matmul(limited, {.m = 256, .n = 256, .k = 65536});
  CHECK_FALSE(cpu_shared.register_kernel);
  CHECK_FALSE(cpu_shared.grouped);
  // A forced tile whose shared tiles exceed the device's memory keeps the 64 x 64 block.
  DeviceTraits sixteen_kib = gpu;
  sixteen_kib.shared_bytes = 16384;
  sixteen_kib.forced = parse_overrides("matmul_tile=8x8").value();
  const MatmulPlan fits = matmul(sixteen_kib, {.m = 64, .n = 64, .k = 64});
  const uint32_t pad = fits.grouped ? 4 : 1;
  CHECK(4 * 16 * (fits.wg_y * fits.tm + pad + fits.wg_x * fits.tn + pad) <= 16384);
}

TEST_CASE("kernel plan: f16 matmuls take cooperative matrices where the device has them", "[plan]") {
  const MatmulShape big{.m = 4096, .n = 4096, .k = 4096, .f16 = true, .rows_vectorizable = true};
  const MatmulShape small{.m = 256, .n = 256, .k = 256, .f16 = true, .rows_vectorizable = true};
  DeviceTraits d = h100_like();
  CHECK_FALSE(cooperative_matmul(d, big).has_value());  // none on the device
  d.cooperative_matrix_f16 = {16, 16, 16};
  const auto native = cooperative_matmul(d, big);
  REQUIRE(native.has_value());
  CHECK_FALSE(native->emulated);
  CHECK(native->block_m() == 128);
  CHECK(native->block_n() == 128);
  CHECK(native->workgroup() == 128);
  CHECK(cooperative_matmul(d, small)->block_n() == 64);  // 16 blocks of 128: smaller ones spread further
  // Its subgroups own fragments by gl_SubgroupID: a driver that may run other sizes than it reports
  // gets the other kernels, and the emulated form (ranges of invocations) still where forced.
  DeviceTraits varying = d;
  varying.fixed_subgroup = false;
  CHECK_FALSE(cooperative_matmul(varying, big).has_value());
  varying.forced.matmul_coop = PlanOverrides::Coop::kNative;
  CHECK_FALSE(cooperative_matmul(varying, big).has_value());
  varying.forced.matmul_coop = PlanOverrides::Coop::kEmulated;
  REQUIRE(cooperative_matmul(varying, small).has_value());
  CHECK(cooperative_matmul(varying, small)->emulated);
  d.cooperative_matrix_f16 = {16, 8, 16};                // narrower fragments, the same block
  CHECK(cooperative_matmul(d, big)->frags_n == 8);
  CHECK(cooperative_matmul(d, big)->block_n() == 128);
  // f32, transposed or odd-width operands keep the other kernels.
  CHECK_FALSE(cooperative_matmul(d, {.m = 4096, .n = 4096, .k = 4096, .rows_vectorizable = true}).has_value());
  CHECK_FALSE(cooperative_matmul(d, {.m = 4096, .n = 4096, .k = 4096, .f16 = true}).has_value());
  d.forced.matmul_coop = PlanOverrides::Coop::kOff;
  CHECK_FALSE(cooperative_matmul(d, big).has_value());
  DeviceTraits cpu = lavapipe_like();
  cpu.forced.matmul_coop = PlanOverrides::Coop::kEmulated;
  const auto emulated = cooperative_matmul(cpu, small);
  REQUIRE(emulated.has_value());
  CHECK(emulated->emulated);
  CHECK(emulated->workgroup() == 4 * cpu.subgroup);
  CHECK(emulated->inner_loops > small.k);  // its products' rows count against a loop limit
  CHECK(emulated->buffers == 1);
  // One shared stage unless forced; forced two where they fit (the 128 x 128 block's 41 KiB in 48),
  // else one; the 64 x 64 block below that.
  d.forced.matmul_coop.reset();
  d.cooperative_matrix_f16 = {16, 16, 16};
  REQUIRE(cooperative_matmul(d, big).has_value());
  CHECK(cooperative_matmul(d, big)->buffers == 1);
  d.forced.matmul_coop_buffers = 2;
  CHECK(cooperative_matmul(d, big)->buffers == 2);
  DeviceTraits tight = d;
  tight.shared_bytes = 32768;
  const auto one_stage = cooperative_matmul(tight, big);
  REQUIRE(one_stage.has_value());
  CHECK(one_stage->buffers == 1);
  CHECK(one_stage->block_n() == 128);
  // One stage is the layout the H200's driver reported 23,040 bytes of shared memory for
  // (tools/rill/bench-h200/run5-8e4aa89/matmul.json, f16 4096^3); two stages add one of A and B.
  CHECK(one_stage->shared_bytes() == 23040);
  CHECK(cooperative_matmul(d, big)->shared_bytes() == 23040 + 2 * (128 * 40 + 32 * 136));
  // Slices of 64 k steps where forced and they fit (the 128 x 128 block's 39 KiB in 48); in 32 KiB
  // the forced depth gives way first, keeping the block.
  d.forced.matmul_coop_buffers.reset();
  CHECK(cooperative_matmul(d, big)->depth == 32);
  d.forced.matmul_coop_depth = 64;
  CHECK(cooperative_matmul(d, big)->depth == 64);
  CHECK(cooperative_matmul(d, big)->shared_bytes() == 2 * (128 * 72 + 64 * 136) + 4 * 16 * 16 * 4);
  CHECK(cooperative_matmul(d, big)->inner_loops < cooperative_matmul(tight, big)->inner_loops);  // half the slices
  tight.forced.matmul_coop_depth = 64;
  CHECK(cooperative_matmul(tight, big)->depth == 32);
  CHECK(cooperative_matmul(tight, big)->block_n() == 128);
  d.forced.matmul_coop_depth.reset();
  tight.forced.matmul_coop_depth.reset();
  tight.shared_bytes = 16384;
  REQUIRE(cooperative_matmul(tight, big).has_value());
  CHECK(cooperative_matmul(tight, big)->block_n() == 64);
  tight.shared_bytes = 4096;
  CHECK_FALSE(cooperative_matmul(tight, big).has_value());
  // Twice the subgroups, each with half the fragments: the same 128 x 128 block.
  d.forced.matmul_coop_groups = std::pair<uint32_t, uint32_t>{2, 4};
  const auto wide = cooperative_matmul(d, big);
  REQUIRE(wide.has_value());
  CHECK(wide->workgroup() == 256);
  CHECK(wide->frags_m == 4);
  CHECK(wide->frags_n == 2);
  CHECK(wide->block_n() == 128);
  CHECK(wide->buffers == 1);  // the default; two fit too (45 KiB with the eight subgroups' stages)
  // Where eight do not fit even with one stage (a 16 KiB device, the emulated 64 x 64 block), the
  // forced subgroups give way to 2 x 2 rather than the cooperative kernel to another.
  DeviceTraits small_wide = lavapipe_like();
  small_wide.shared_bytes = 16384;
  small_wide.forced.matmul_coop = PlanOverrides::Coop::kEmulated;
  small_wide.forced.matmul_coop_groups = std::pair<uint32_t, uint32_t>{2, 4};
  const auto fallback = cooperative_matmul(small_wide, small);
  REQUIRE(fallback.has_value());
  CHECK(fallback->buffers == 1);
  CHECK(fallback->groups_n == 2);
  CHECK(fallback->block_n() == 64);
  small_wide.shared_bytes = 32768;
  REQUIRE(cooperative_matmul(small_wide, small).has_value());
  CHECK(cooperative_matmul(small_wide, small)->groups_n == 4);
  d.forced.matmul_coop_groups.reset();
  CHECK(parse_overrides("matmul_coop_groups=4x2").value().matmul_coop_groups == std::pair<uint32_t, uint32_t>{4, 2});
  CHECK_FALSE(parse_overrides("matmul_coop_groups=4x4").is_ok());
  d.forced.matmul_coop_buffers = 1;
  CHECK(cooperative_matmul(d, big)->buffers == 1);
  CHECK(parse_overrides("matmul_coop_buffers=1").value().matmul_coop_buffers == 1u);
  CHECK_FALSE(parse_overrides("matmul_coop_buffers=3").is_ok());
  CHECK(parse_overrides("matmul_coop=native").value().matmul_coop == PlanOverrides::Coop::kNative);
  const auto bad = parse_overrides("matmul_coop=yes");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("off, native or emulated") != std::string::npos);
}

TEST_CASE("kernel plan: GPU matmuls of few blocks and a long K are split along K", "[plan]") {
  const DeviceTraits d = h100_like();
  const MatmulPlan narrow = matmul(d, {.m = 256, .n = 1024, .k = 4096});  // 64 blocks of 64 x 64
  CHECK(narrow.splits == 8);
  CHECK(narrow.inner_loops < matmul(d, {.m = 256, .n = 1024, .k = 512}).inner_loops * 2);  // a share of K each
  CHECK(matmul(d, {.m = 4096, .n = 4096, .k = 4096}).splits == 1);                         // blocks enough
  CHECK(matmul(d, {.m = 256, .n = 1024, .k = 512}).splits == 1);                           // K too short to share
  CHECK(matmul(d, {.m = 1, .n = 1024, .k = 4096}).splits == 1);                            // a decoding step's row
  CHECK(matmul(lavapipe_like(), {.m = 256, .n = 1024, .k = 4096}).splits == 1);            // register kernel
  DeviceTraits forced = d;
  forced.forced.matmul_splits = 3;
  CHECK(matmul(forced, {.m = 4096, .n = 4096, .k = 4096}).splits == 3);
  // Slices 16 deep unless forced; a forced depth that would not fit the shared memory is cut to 16
  // before the tile shrinks, and a loop-limited driver counts the deeper slices' steps.
  CHECK(matmul(d, {.m = 4096, .n = 4096, .k = 4096}).depth == 16);
  DeviceTraits deep = d;
  deep.forced.matmul_depth = 32;
  const MatmulPlan deep_plan = matmul(deep, {.m = 65536, .n = 256, .k = 512});
  CHECK(deep_plan.depth == 32);
  CHECK(deep_plan.tm == 8);
  CHECK(deep_plan.inner_loops == 16 * 40 + 8);
  deep.shared_bytes = 16384;
  CHECK(matmul(deep, {.m = 1024, .n = 1024, .k = 1024}).depth == 16);
  CHECK(parse_overrides("matmul_depth=8").value().matmul_depth == 8u);
  CHECK_FALSE(parse_overrides("matmul_depth=64").is_ok());
  // One shared stage unless two are forced, and two only where both fit: 8 x 8 tiles 16 deep take
  // 2 x 16.9 KB, 32 deep 2 x 33.8 KB (past the H100's 48 KiB: one stage); the register kernel has none.
  CHECK(matmul(d, {.m = 4096, .n = 4096, .k = 4096}).stages == 1);
  DeviceTraits staged = d;
  staged.forced.matmul_buffers = 2;
  CHECK(matmul(staged, {.m = 4096, .n = 4096, .k = 4096}).stages == 2);
  staged.forced.matmul_depth = 32;
  CHECK(matmul(staged, {.m = 4096, .n = 4096, .k = 4096}).stages == 1);
  CHECK(matmul(staged, {.m = 1024, .n = 1024, .k = 256}).stages == 2);  // 4 x 4 tiles 32 deep: 2 x 17.4 KB
  DeviceTraits staged_cpu = lavapipe_like();
  staged_cpu.forced.matmul_buffers = 2;
  CHECK(matmul(staged_cpu, {.m = 1024, .n = 1024, .k = 1024}).stages == 1);
  CHECK_FALSE(parse_overrides("matmul_buffers=3").is_ok());
  CHECK_FALSE(parse_overrides("matmul_splits=0").is_ok());
  CHECK(parse_overrides("matmul_splits=64").value().matmul_splits == 64u);
}
