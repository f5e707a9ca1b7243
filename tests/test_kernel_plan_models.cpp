// Kernel plans of the two jobs' own kernels (engine/src/kernel_plan_models.cpp) for devices rill
// is not running on: TransNormer decoding and prefill segments, the ICL layers.
#include <catch2/catch.hpp>

#include "kernel_plan.hpp"
#include "plan_devices.hpp"

namespace {

using namespace rill::ops::plan;
using rill_test::h100_like;
using rill_test::lavapipe_like;
using rill_test::mali_like;

}  // namespace

TEST_CASE("kernel plan: CPU drivers read dense f32 decoding weights as texels, inputs by shuffles", "[plan]") {
  LmDecodeShape model;  // the default model in f32
  model.dense_f32 = true;
  model.largest_weight = 256 * 512;
  const LmDecodePlan cpu = lm_decode(lavapipe_like(), model).value();
  CHECK(cpu.texel_weights);
  CHECK(cpu.lane_groups == 1);  // heads of 32: eight lanes of 4 columns, a subgroup per matrix
  CHECK(cpu.x_shuffle);
  const LmDecodePlan gpu = lm_decode(h100_like(), model).value();  // GPUs: storage buffers
  CHECK_FALSE(gpu.texel_weights);
  CHECK_FALSE(gpu.x_shuffle);
  CHECK(gpu.lane_groups == 1);
  // test_lm_model.cpp's in_thirty_twos model: shuffles too, so that test runs them.
  LmDecodeShape thirty_twos{.width = 64, .heads = 2, .head_dim = 32, .ffn = 64, .vocab = 64, .max_keys = 16};
  thirty_twos.dense_f32 = true;
  thirty_twos.largest_weight = 64 * 64;
  CHECK(lm_decode(lavapipe_like(), thirty_twos).value().x_shuffle);
  // Heads of 16 cannot fill a subgroup of 8 lanes at 4 columns: 16 columns per lane, no shuffles
  // (test_lm_model.cpp's in_sixteens model); nor with forced columns that split no head into lanes.
  LmDecodeShape sixteens{.width = 32, .heads = 2, .head_dim = 16, .ffn = 48, .vocab = 48, .max_keys = 16};
  sixteens.dense_f32 = true;
  sixteens.largest_weight = 48 * 48;
  const LmDecodePlan narrow_heads = lm_decode(lavapipe_like(), sixteens).value();
  CHECK(narrow_heads.lane_groups == 4);
  CHECK_FALSE(narrow_heads.x_shuffle);
  DeviceTraits wide_lanes = lavapipe_like();
  wide_lanes.forced = parse_overrides("lm_decode_columns=16").value();
  CHECK_FALSE(lm_decode(wide_lanes, model).value().x_shuffle);
  // Not for packed weights or f16 activations, nor where a view cannot hold the largest matrix or
  // the device cannot back the format; storage buffers then, 4 columns as before.
  DeviceTraits small = lavapipe_like();
  small.max_texels = 256 * 512 / 4 - 1;
  DeviceTraits no_format = lavapipe_like();
  no_format.texel_f32x4 = false;
  LmDecodeShape packed = model;
  packed.dense_f32 = false;
  for (const auto& [d, s] :
       {std::pair{small, model}, std::pair{no_format, model}, std::pair{lavapipe_like(), packed}}) {
    const LmDecodePlan p = lm_decode(d, s).value();
    CHECK(p.fused);
    CHECK_FALSE(p.texel_weights);
    CHECK(p.lane_groups == 1);
  }
  // Forced either way; forcing texels where they do not fit decodes per op, and says why.
  DeviceTraits forced = h100_like();
  forced.forced = parse_overrides("lm_decode_weights=texel").value();
  CHECK(lm_decode(forced, model).value().texel_weights);
  forced = lavapipe_like();
  forced.forced = parse_overrides("lm_decode_weights=buffer").value();
  CHECK_FALSE(lm_decode(forced, model).value().texel_weights);
  no_format.forced = parse_overrides("lm_decode_weights=texel").value();
  const LmDecodePlan refused = lm_decode(no_format, model).value();
  CHECK_FALSE(refused.fused);
  CHECK(refused.per_op_reason.find("texel") != std::string::npos);
  CHECK_FALSE(parse_overrides("lm_decode_weights=image").is_ok());
}

TEST_CASE("kernel plan: CPU decoding reads int8 words and scales as texels at 16 columns per invocation", "[plan]") {
  // The 385M configuration in int8, groups of 64 rows, f32 activations.
  const LmDecodeShape int8{.width = 1024,
                           .heads = 8,
                           .head_dim = 128,
                           .ffn = 2816,
                           .vocab = 64000,
                           .bindings_per_weight = 2,
                           .int8_group = 64,
                           .f32_activations = true,
                           .largest_weight = 1024ull * 64000};
  const LmDecodePlan p = lm_decode(lavapipe_like(), int8).value();
  CHECK(p.fused);
  CHECK(p.lane_groups == 4);
  CHECK(p.texel_words);
  CHECK_FALSE(p.texel_weights);  // dense f32 weights only
  CHECK_FALSE(p.x_shuffle);      // slower for int8 (kernel_plan_models.cpp)
  CHECK(p.ffn_slice == 352);
  // Dense f32 weights of that shape: texels at 16 columns, slices kept (shuffles ran slower there).
  LmDecodeShape dense = int8;
  dense.bindings_per_weight = 1;
  dense.int8_group = 0;
  dense.dense_f32 = true;
  const LmDecodePlan dp = lm_decode(lavapipe_like(), dense).value();
  CHECK(dp.texel_weights);
  CHECK(dp.lane_groups == 4);
  CHECK_FALSE(dp.x_shuffle);
  CHECK(dp.ffn_slice == 352);
  CHECK(dp.logit_columns == 1024);
  LmDecodeShape f16 = int8;
  f16.f32_activations = false;  // the f16-activation kernels have no texel form
  LmDecodeShape eights = int8;
  eights.ffn = 2824;  // FFN columns in eights: 8 columns per invocation, two words of a texel
  DeviceTraits no_words = lavapipe_like();
  no_words.texel_u32x4 = false;
  DeviceTraits buffer = lavapipe_like();
  buffer.forced = parse_overrides("lm_decode_weights=buffer").value();
  for (const auto& [d, s] : {std::pair{lavapipe_like(), f16}, std::pair{lavapipe_like(), eights},
                             std::pair{no_words, int8}, std::pair{buffer, int8}}) {
    const LmDecodePlan q = lm_decode(d, s).value();
    CHECK(q.fused);
    CHECK_FALSE(q.texel_words);
  }
  CHECK_FALSE(lm_decode(h100_like(), int8).value().texel_words);  // GPUs: storage buffers, 4 columns
  // Forced where the words cannot be texels: per op, and why.
  no_words.forced = parse_overrides("lm_decode_weights=texel").value();
  const LmDecodePlan refused = lm_decode(no_words, int8).value();
  CHECK_FALSE(refused.fused);
  CHECK(refused.per_op_reason.find("int8 or int4 words") != std::string::npos);
}

TEST_CASE("kernel plan: CPU decoding reads int4 words as texels at 16 columns per invocation", "[plan]") {
  const LmDecodeShape int4{.bindings_per_weight = 2,
                           .int8_group = 32,
                           .int4_words = true,
                           .f32_activations = true,
                           .largest_weight = 256ull * 512};
  const LmDecodePlan p = lm_decode(lavapipe_like(), int4).value();
  CHECK(p.fused);
  CHECK(p.lane_groups == 4);  // 16 columns, two words of a row: half a texel
  CHECK(p.texel_words);
  CHECK_FALSE(p.x_shuffle);  // as int8: the rows' unpacking outweighs the saved shared loads
  DeviceTraits buffers = lavapipe_like();
  buffers.forced = parse_overrides("lm_decode_weights=buffer").value();
  const LmDecodePlan b = lm_decode(buffers, int4).value();
  CHECK(b.fused);
  CHECK_FALSE(b.texel_words);
}

TEST_CASE("kernel plan: CPU decoding reads f16 words as texels at 8 or 16 columns per invocation", "[plan]") {
  // The 385M configuration with f16 weights, f32 activations.
  const LmDecodeShape f16{.width = 1024,
                          .heads = 8,
                          .head_dim = 128,
                          .ffn = 2816,
                          .vocab = 64000,
                          .f16_words = true,
                          .f32_activations = true,
                          .largest_weight = 1024ull * 64000};
  const LmDecodePlan p = lm_decode(lavapipe_like(), f16).value();
  CHECK(p.fused);
  CHECK(p.lane_groups == 4);  // two texels of words per row
  CHECK(p.texel_words);
  CHECK_FALSE(p.texel_weights);
  // Every product in whole passes of a subgroup's 128 columns, so the inputs come by shuffles:
  // FFN slices of 256 (11 of them) and 640 logits per workgroup, where 352 and 1,024 were not.
  CHECK(p.x_shuffle);
  CHECK(p.ffn_slice == 256);
  CHECK(p.logit_columns == 640);
  // The test model of heads of 128 (test_lm_model.cpp's in_128s): slices and logits of 128.
  const LmDecodeShape small{.width = 256,
                            .heads = 2,
                            .head_dim = 128,
                            .ffn = 256,
                            .vocab = 128,
                            .f16_words = true,
                            .f32_activations = true,
                            .largest_weight = 256ull * 256};
  const LmDecodePlan sp = lm_decode(lavapipe_like(), small).value();
  CHECK(sp.x_shuffle);
  CHECK(sp.ffn_slice == 128);
  CHECK(sp.logit_columns == 128);
  // Turned off: the first slices, inputs from shared memory.
  DeviceTraits off = lavapipe_like();
  off.forced = parse_overrides("lm_decode_shuffle=off").value();
  const LmDecodePlan unshuffled = lm_decode(off, f16).value();
  CHECK(unshuffled.texel_words);
  CHECK_FALSE(unshuffled.x_shuffle);
  CHECK(unshuffled.ffn_slice == 352);
  CHECK(unshuffled.logit_columns == 1024);
  CHECK_FALSE(parse_overrides("lm_decode_shuffle=maybe").is_ok());
  LmDecodeShape eights = f16;
  eights.ffn = 2824;  // FFN columns in eights: one texel of words per row
  const LmDecodePlan e = lm_decode(lavapipe_like(), eights).value();
  CHECK(e.lane_groups == 2);
  CHECK(e.texel_words);
  // Widths only in fours (half a texel per row), f16 activations, no u32 texels, storage buffers
  // forced (the earlier plan: 4 columns per invocation), a GPU: storage buffers.
  LmDecodeShape fours = f16;
  fours.ffn = 2820;
  LmDecodeShape f16_activations = f16;
  f16_activations.f32_activations = false;
  DeviceTraits no_words = lavapipe_like();
  no_words.texel_u32x4 = false;
  DeviceTraits buffer = lavapipe_like();
  buffer.forced = parse_overrides("lm_decode_weights=buffer").value();
  for (const auto& [d, s] : {std::pair{lavapipe_like(), fours}, std::pair{lavapipe_like(), f16_activations},
                             std::pair{no_words, f16}, std::pair{buffer, f16}, std::pair{h100_like(), f16}}) {
    const LmDecodePlan q = lm_decode(d, s).value();
    CHECK(q.fused);
    CHECK_FALSE(q.texel_words);
    CHECK(q.lane_groups == 1);
  }
  // Forced where the words cannot be texels: per op, and why.
  no_words.forced = parse_overrides("lm_decode_weights=texel").value();
  const LmDecodePlan refused = lm_decode(no_words, f16).value();
  CHECK_FALSE(refused.fused);
  CHECK(refused.per_op_reason.find("f16 words") != std::string::npos);
}

TEST_CASE("kernel plan: TransNormer decoding is fused where the kernels fit, per-op elsewhere", "[plan]") {
  const LmDecodeShape model;  // the default model: width 256, 8 heads of 32, FFN 512, vocab 256
  const LmDecodePlan cpu = lm_decode(lavapipe_like(), model).value();
  CHECK(cpu.fused);
  CHECK(cpu.workgroup == 8);  // one subgroup
  CHECK(cpu.ffn_slice == 64);
  const LmDecodePlan gpu = lm_decode(h100_like(), model).value();
  CHECK(gpu.fused);
  CHECK(gpu.workgroup == 256);
  CHECK(gpu.ffn_slice == 16);
  CHECK(gpu.lane_groups == 1);  // four columns per invocation, so that more invocations split the rows
  CHECK(gpu.row_batch == 4);    // weight loads four rows at a time on GPUs, one on CPU drivers
  CHECK(cpu.row_batch == 1);
  {
    DeviceTraits rows = h100_like();
    rows.forced = parse_overrides("lm_decode_rows=8").value();
    CHECK(lm_decode(rows, model).value().row_batch == 8);
  }
  LmDecodeShape odd = model;
  odd.vocab = 250;  // not in fours: single columns
  CHECK(lm_decode(h100_like(), odd).value().lane_groups == 0);
  DeviceTraits single = h100_like();
  single.forced = parse_overrides("lm_decode_columns=1").value();
  CHECK(lm_decode(single, model).value().lane_groups == 0);
  single.forced = parse_overrides("lm_decode_columns=16").value();
  CHECK(lm_decode(single, model).value().lane_groups == 4);
  single.forced = parse_overrides("lm_decode_columns=8").value();
  const auto undivided = lm_decode(single, odd);  // 250 logits are not in eights: refused by name
  REQUIRE_FALSE(undivided.is_ok());
  CHECK(undivided.status().message().find("8 columns per invocation") != std::string::npos);
  CHECK_FALSE(parse_overrides("lm_decode_columns=2").is_ok());
  CHECK_FALSE(parse_overrides("lm_decode_rows=3").is_ok());
  // The fused kernels' parameters beside the per-op graph are refused, not ignored.
  for (const char* fused_only : {"lm_decode_grid=64x4", "lm_decode_columns=1", "lm_decode_rows=2",
                                 "lm_decode_weights=buffer", "lm_decode_shuffle=off"}) {
    DeviceTraits per_op = h100_like();
    per_op.forced = parse_overrides(std::string("lm_decode=per-op,") + fused_only).value();
    const auto refused = lm_decode(per_op, model);
    INFO(fused_only);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.status().message().find("lm_decode=per-op") != std::string::npos);
  }
  single.forced = parse_overrides("lm_decode=per-op").value();
  CHECK_FALSE(lm_decode(single, model).value().fused);
  // Counts are whole values: trailing text, signs and empty ones are refused, not read as a prefix.
  for (const char* bad : {"la_tile=8abc", "lm_decode_rows=4 ", "matmul_splits=+4", "lm_decode_grid=256x16x",
                          "lm_decode_grid=x16", "icl_layers_per_dispatch=", "la_scan_groups=0"})
    CHECK_FALSE(parse_overrides(bad).is_ok());
  CHECK(parse_overrides("lm_decode_grid=256x16").value().lm_decode_grid == std::pair<uint32_t, uint32_t>{256, 16});
  CHECK(lm_decode(mali_like(), model).value().fused);
  // TransNormerLLM-385M with int8 weights (width 1024, heads of 128, LRPE) fits lavapipe's loop
  // limit with four columns per load.
  const LmDecodeShape tnl{.width = 1024,
                          .heads = 8,
                          .head_dim = 128,
                          .ffn = 2816,
                          .vocab = 64000,
                          .max_keys = 0,
                          .lrpe = true,
                          .bindings_per_weight = 2,
                          .int8_group = 64};
  const LmDecodePlan tnl_cpu = lm_decode(lavapipe_like(), tnl).value();
  INFO(tnl_cpu.per_op_reason);
  CHECK(tnl_cpu.fused);
  CHECK(tnl_cpu.lane_groups == 4);
  // A wide model's rows exceed a phone's shared memory; a device with few storage-buffer bindings
  // cannot bind the int8 mixer's 19: both decode per op, and forcing the fused form is refused.
  LmDecodeShape wide = model;
  wide.width = 4096;
  wide.head_dim = 512;
  const LmDecodePlan narrow = lm_decode(mali_like(), wide).value();
  CHECK_FALSE(narrow.fused);
  CHECK(narrow.per_op_reason.find("shared memory") != std::string::npos);
  DeviceTraits few = h100_like();
  few.max_storage_buffers = 16;
  LmDecodeShape int8 = model;
  int8.bindings_per_weight = 2;
  CHECK(lm_decode(few, model).value().fused);
  CHECK_FALSE(lm_decode(few, int8).value().fused);
  few.forced.lm_decode_fused = true;
  const auto refused = lm_decode(few, int8);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("19 storage buffers") != std::string::npos);
  DeviceTraits per_op = h100_like();
  per_op.forced = parse_overrides("lm_decode=per-op").value();
  CHECK_FALSE(lm_decode(per_op, model).value().fused);
  CHECK_FALSE(parse_overrides("lm_decode=fast").is_ok());
  // A vocabulary of 2^20 at a GPU's 16 logits per workgroup needs 65,536 workgroups in x: past
  // 65535 (a dispatch the recording refused, so no token decoded), it decodes per op; NVIDIA's
  // larger limit fuses.
  LmDecodeShape big_vocab = model;
  big_vocab.vocab = 1u << 20;
  DeviceTraits limited = h100_like();
  limited.max_groups_x = 65535;
  const LmDecodePlan past = lm_decode(limited, big_vocab).value();
  CHECK_FALSE(past.fused);
  CHECK(past.per_op_reason.find("65536 workgroups exceed the device's 65535 in x") != std::string::npos);
  limited.max_groups_x = 0x7fffffff;
  CHECK(lm_decode(limited, big_vocab).value().fused);
  // A head in blocks of 2^17 (a device binding 128 MiB at once) dispatches 8,192 workgroups a block.
  limited.max_groups_x = 65535;
  big_vocab.widest_head_block = 1u << 17;
  CHECK(lm_decode(limited, big_vocab).value().fused);
  const auto both = parse_overrides("linear_attention=serial,lm_decode=fused").value();
  CHECK(both.linear_attention == LinearAttentionAlgorithm::kChunkedSerial);
  CHECK(both.lm_decode_fused == true);
}

TEST_CASE("kernel plan: ICL layers run a task per lane on CPU drivers and a workgroup per task on GPUs", "[plan]") {
  const IclLayersShape vladymyrov{.width = 11, .tokens = 21}, ahn{.width = 6, .tokens = 21};
  CHECK_FALSE(icl_layers(lavapipe_like(), vladymyrov).value().workgroup_per_task);
  const IclLayersPlan gpu = icl_layers(h100_like(), vladymyrov).value();
  CHECK(gpu.workgroup_per_task);
  // Eight tasks of a subgroup each share a workgroup of 256 invocations.
  CHECK(gpu.tasks_per_workgroup == 8);
  CHECK(gpu.workgroup == 32);
  // With the layer's parameters (FULL, one head: P and Q), as the trainer asks: Ahn's 8 tasks take
  // 19.7 KB; Vladymyrov's 8 would take 47.1 KB of 48 KiB, past the seven eighths a default leaves
  // room for (4 tasks of 64 invocations, as the H200 ran), and fit when forced; 16 do not.
  const IclLayersShape ahn_full{.width = 6, .tokens = 21, .layer_params = 72};
  const IclLayersShape vladymyrov_full{.width = 11, .tokens = 21, .layer_params = 242};
  CHECK(icl_layers(h100_like(), ahn_full).value().tasks_per_workgroup == 8);
  const IclLayersPlan full = icl_layers(h100_like(), vladymyrov_full).value();
  CHECK(full.tasks_per_workgroup == 4);
  CHECK(full.workgroup == 64);
  DeviceTraits eight = h100_like();
  eight.forced.icl_tasks_per_workgroup = 8;
  CHECK(icl_layers(eight, vladymyrov_full).value().tasks_per_workgroup == 8);
  eight.forced.icl_tasks_per_workgroup = 16;
  CHECK_FALSE(icl_layers(eight, vladymyrov_full).is_ok());
  // One task per workgroup: a lane per matrix entry, up to 128.
  DeviceTraits one_task = h100_like();
  one_task.forced.icl_tasks_per_workgroup = 1;
  CHECK(icl_layers(one_task, vladymyrov).value().workgroup == 128);  // the 11 x 11 matrices
  CHECK(icl_layers(one_task, ahn).value().workgroup == 64);          // 6 x 6 = 36 entries
  // Outputs in 3 x 3 blocks (forced): an invocation per block of the square matrices (Vladymyrov's
  // 11 x 11 are 4 x 4 blocks, Ahn's 6 x 6 are 2 x 2), as many tasks as the shared memory leaves room
  // for, and a workgroup at least a subgroup wide.
  DeviceTraits blocked = h100_like();
  blocked.forced.icl_block = 3;
  const IclLayersPlan v3 = icl_layers(blocked, vladymyrov_full).value();
  CHECK(v3.output_block == 3);
  CHECK(v3.tasks_per_workgroup == 4);
  CHECK(v3.workgroup == 16);
  const IclLayersPlan a3 = icl_layers(blocked, ahn_full).value();
  CHECK(a3.tasks_per_workgroup == 16);
  CHECK(a3.workgroup == 4);
  blocked.forced.icl_tasks_per_workgroup = 1;
  CHECK(icl_layers(blocked, vladymyrov_full).value().workgroup == 32);
  CHECK(full.output_block == 1);  // unforced: an output per invocation, as GPUs ran them
  const IclLayersPlan phone = icl_layers(mali_like(), vladymyrov).value();
  CHECK(phone.workgroup_per_task);  // a task's 4.7 KiB of shared arrays fit 16 KiB twice
  CHECK(phone.tasks_per_workgroup == 2);
  CHECK(phone.workgroup * phone.tasks_per_workgroup <= mali_like().max_invocations);
  // d = 64: four 65 x 65 matrices exceed the shared memory; forced, that is an error with the sizes.
  // A big batch takes a task per invocation; a grid of models with small batches keeps the kernels
  // each model runs alone (its training is bit for bit a lone model's).
  CHECK_FALSE(icl_layers(h100_like(), {.width = 11, .tokens = 21, .tasks = 43008}).value().workgroup_per_task);
  CHECK(icl_layers(h100_like(), {.width = 11, .tokens = 21, .tasks = 43008, .model_tasks = 2048})
            .value()
            .workgroup_per_task);
  // Every layer in one dispatch on big GPUs; one per dispatch where a watchdog kills long ones.
  const IclLayersShape deep{.width = 33, .tokens = 129, .tasks = 2048, .layers = 16};
  CHECK(icl_layers(h100_like(), deep).value().layers_per_dispatch == 16);
  DeviceTraits watched = h100_like();
  watched.short_dispatches = true;
  CHECK(icl_layers(watched, deep).value().layers_per_dispatch == 1);
  const IclLayersShape wide{.width = 65, .tokens = 21};
  CHECK_FALSE(icl_layers(h100_like(), wide).value().workgroup_per_task);
  // d = 160: its 161 x 161 matrices neither fit the shared memory nor an invocation's private
  // memory on a GPU (545 KB a task, past NVIDIA's 512 KiB): refused with both sizes, as a forced
  // task per invocation is. CPU drivers keep the arrays on their stacks.
  const IclLayersShape wider{.width = 161, .tokens = 21};
  const auto too_wide = icl_layers(h100_like(), wider);
  REQUIRE_FALSE(too_wide.is_ok());
  CHECK(too_wide.status().message().find("bytes of private memory per invocation") != std::string::npos);
  DeviceTraits per_task = h100_like();
  per_task.forced.icl_workgroup_per_task = false;
  CHECK_FALSE(icl_layers(per_task, wider).is_ok());
  CHECK_FALSE(icl_layers(lavapipe_like(), wider).value().workgroup_per_task);
  // Where the shared memory holds a task and the private memory does not, a big batch takes a
  // workgroup per task too (width 161: 560 KB of shared arrays, 546 KB private).
  DeviceTraits roomy = h100_like();
  roomy.shared_bytes = 600 << 10;
  CHECK(icl_layers(roomy, {.width = 161, .tokens = 21, .tasks = 43008}).value().workgroup_per_task);
  CHECK(icl_layers(h100_like(), {.width = 115, .tokens = 21, .tasks = 43008}).is_ok());  // 284 KB: kept
  DeviceTraits forced = lavapipe_like();
  forced.forced.icl_workgroup_per_task = true;
  CHECK(icl_layers(forced, vladymyrov).value().workgroup_per_task);
  forced.shared_bytes = 1024;
  auto refused = icl_layers(forced, vladymyrov);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("shared memory") != std::string::npos);
  CHECK(parse_overrides("icl_layers=per-workgroup").value().icl_workgroup_per_task == true);
  CHECK_FALSE(parse_overrides("icl_layers=sideways").is_ok());
  // The top layer computes only what the loss reads unless forced whole, on every device.
  CHECK(icl_layers(lavapipe_like(), vladymyrov).value().query_top_layer);
  CHECK(icl_layers(h100_like(), vladymyrov).value().query_top_layer);
  DeviceTraits whole_top = h100_like();
  whole_top.forced = parse_overrides("icl_top_layer=full").value();
  CHECK_FALSE(icl_layers(whole_top, vladymyrov).value().query_top_layer);
  CHECK(parse_overrides("icl_top_layer=query").value().icl_query_top_layer == true);
  CHECK_FALSE(parse_overrides("icl_top_layer=half").is_ok());
  // The per-task backward reads as texels on CPU drivers that back 4 x f32 views of its arrays, not
  // on GPUs, not when forced off, not when the tokens of every layer exceed a view.
  const IclLayersShape batch{.width = 11, .tokens = 21, .tasks = 2048, .layers = 3};
  CHECK(icl_layers(lavapipe_like(), batch).value().texel_reads);
  CHECK_FALSE(icl_layers(h100_like(), batch).value().texel_reads);
  DeviceTraits no_texels = lavapipe_like();
  no_texels.forced = parse_overrides("icl_texel=off").value();
  CHECK_FALSE(icl_layers(no_texels, batch).value().texel_reads);
  DeviceTraits small_views = lavapipe_like();
  small_views.max_texels = 4 * 21 * 11 * 2048 / 4 - 1;  // one texel short of the 4 layers' tokens
  CHECK_FALSE(icl_layers(small_views, batch).value().texel_reads);
  small_views.max_texels += 1;
  CHECK(icl_layers(small_views, batch).value().texel_reads);
  CHECK(parse_overrides("icl_tasks_per_workgroup=16").value().icl_tasks_per_workgroup == 16u);
  CHECK(parse_overrides("icl_layers_per_dispatch=2").value().icl_layers_per_dispatch == 2u);
  for (const char* bad : {"icl_tasks_per_workgroup=3", "icl_tasks_per_workgroup=128", "icl_tasks_per_workgroup=0",
                          "icl_layers_per_dispatch=0", "icl_layers_per_dispatch=x"})
    CHECK_FALSE(parse_overrides(bad).is_ok());
  // Forced tasks per workgroup that exceed the shared memory are refused with the reason.
  DeviceTraits many = h100_like();
  many.forced.icl_tasks_per_workgroup = 64;
  auto too_many = icl_layers(many, {.width = 11, .tokens = 21, .layer_params = 242});
  REQUIRE_FALSE(too_many.is_ok());
  CHECK(too_many.status().message().find("64 tasks per workgroup") != std::string::npos);
}

TEST_CASE("kernel plan: ICL layers run as many per dispatch as the loop budget allows", "[plan]") {
  // Vladymyrov et al., FULL: about 14,800 loop iterations per layer's backward, a task per invocation.
  const IclLayersShape seven{.width = 11, .tokens = 21, .layers = 7, .layer_params = 242, .layer_iterations = 14800};
  CHECK(icl_layers(h100_like(), seven).value().layers_per_dispatch == 7);  // no loop limit
  DeviceTraits limited = h100_like();
  limited.loop_budget = 57344;
  CHECK(icl_layers(limited, seven).value().layers_per_dispatch == 3);  // 57,344 / 14,800
  IclLayersShape huge = seven;
  huge.layer_iterations = 100000;  // past the budget: one layer (check_device refuses what cannot run)
  CHECK(icl_layers(limited, huge).value().layers_per_dispatch == 1);
  // CPU drivers keep a layer per dispatch unless forced, and forced, the budget still bounds it.
  CHECK(icl_layers(lavapipe_like(), seven).value().layers_per_dispatch == 1);
  DeviceTraits forced = lavapipe_like();
  forced.forced.icl_layers_per_dispatch = 2;
  CHECK(icl_layers(forced, seven).value().layers_per_dispatch == 2);
  forced.forced.icl_layers_per_dispatch = 9;
  CHECK(icl_layers(forced, seven).value().layers_per_dispatch == 3);
  forced = h100_like();
  forced.forced.icl_layers_per_dispatch = 9;  // at most the model's layers
  CHECK(icl_layers(forced, seven).value().layers_per_dispatch == 7);
}

TEST_CASE("kernel plan: GPU decoding's grid can be forced, and bad grids are named", "[plan]") {
  DeviceTraits gpu = h100_like();
  const LmDecodePlan planned = lm_decode(gpu, {}).value();
  CHECK((planned.fused && planned.workgroup == 256 && planned.ffn_slice == 16 && planned.logit_columns == 16));
  gpu.forced = parse_overrides("lm_decode_grid=512x8").value();
  const LmDecodePlan forced = lm_decode(gpu, {}).value();
  CHECK((forced.workgroup == 512 && forced.ffn_slice == 8 && forced.logit_columns == 8));
  for (const char* bad :
       {"lm_decode_grid=300x16", "lm_decode_grid=256", "lm_decode_grid=256x3", "lm_decode_grid=x16"}) {
    INFO(bad);
    CHECK_FALSE(parse_overrides(bad).is_ok());
  }
  CHECK(lm_decode(lavapipe_like(), {}).value().workgroup == 8);  // CPU drivers keep a subgroup
}

TEST_CASE("kernel plan: the host polls a discrete GPU's fences before it sleeps, and nothing else's", "[plan]") {
  CHECK(wait_spin_us(h100_like()) == 200);
  CHECK(wait_spin_us(lavapipe_like()) == 0);  // the work runs on the host's cores
  CHECK(wait_spin_us(mali_like()) == 0);      // a phone: the host's power budget
  DeviceTraits forced = lavapipe_like();
  forced.forced = parse_overrides("wait_spin_us=1500").value();
  CHECK(wait_spin_us(forced) == 1500);
  forced.forced = parse_overrides("wait_spin_us=off").value();
  CHECK(wait_spin_us(forced) == 0);
  CHECK_FALSE(parse_overrides("wait_spin_us=0").is_ok());
  CHECK_FALSE(parse_overrides("wait_spin_us=10001").is_ok());
  CHECK_FALSE(parse_overrides("wait_spin_us=-1").is_ok());
}

TEST_CASE("kernel plan: prefill segments are longer on GPUs, and big ICL batches run a task per invocation", "[plan]") {
  CHECK(lm_prefill_segment(lavapipe_like()) == 2048);
  CHECK(lm_prefill_segment(h100_like()) == 8192);
  CHECK(lm_prefill_segment(mali_like()) == 2048);  // its segments come out of the system's memory
  const DeviceTraits gpu = h100_like();
  CHECK(icl_layers(gpu, {.width = 11, .tokens = 21, .tasks = 2048}).value().workgroup_per_task);
  CHECK_FALSE(icl_layers(gpu, {.width = 11, .tokens = 21, .tasks = 21 * 2048}).value().workgroup_per_task);
  CHECK_FALSE(icl_layers(lavapipe_like(), {.width = 11, .tokens = 21, .tasks = 2048}).value().workgroup_per_task);
}
