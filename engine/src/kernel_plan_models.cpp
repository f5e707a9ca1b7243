// Kernel plans of the two jobs' own kernels: TransNormer decoding and prefill segments, the ICL
// sampler and layers (kernel_plan.hpp).
#include <algorithm>

#include "kernel_plan.hpp"
#include "kernel_plan_util.hpp"

namespace rill::ops::plan {

LmDecodePlan fused_decode_plan(const DeviceTraits& d, const LmDecodeShape& s) {
  LmDecodePlan p;
  auto per_op = [&](std::string why) {
    p.fused = false;
    p.per_op_reason = std::move(why);
    return p;
  };
  // CPU drivers: one subgroup, whose lanes walk several columns each (barriers and shared memory
  // cost more than registers there). GPUs: 256 invocations and 16 columns per workgroup, the narrow
  // products split over rows (decode_common.glsl's matvec). One token's products are narrow, so their
  // time is the latency of each invocation's serial walk over the rows: more workgroups (32 FFN
  // slices instead of 8) and more invocations splitting the rows shorten it. 128 x 64 took
  // 24 us per FFN call on an H200 (rill profile).
  const std::pair<uint32_t, uint32_t> grid = d.forced.lm_decode_grid.value_or(std::pair<uint32_t, uint32_t>{256, 16});
  const uint32_t gpu_workgroup = grid.first, gpu_columns = grid.second;  // captured below: no structured binding
  p.workgroup = d.family == Family::kGpu ? std::min(gpu_workgroup, d.max_invocations) : std::max(d.subgroup, 4u);
  if (p.workgroup > d.max_invocations) return per_op("no workgroup size fits the device");
  // FFN slices and logit columns: gpu_columns per workgroup on GPUs (many workgroups); about eight
  // workgroups' worth on CPU drivers, where each workgroup is a thread's long loop.
  auto columns = [&](uint32_t total, uint32_t cpu_max) {
    if (d.family == Family::kGpu) return std::min<uint32_t>(total, gpu_columns);
    return std::min<uint32_t>(total, std::clamp<uint32_t>(round_up(ceil_div(total, 8), 32), 32, cpu_max));
  };
  p.ffn_slice = columns(s.ffn, 512);
  p.logit_columns = columns(s.vocab, 1024);
  auto size_shared_rows = [&] {
    p.in_max = std::max({s.width, p.ffn_slice, 4 * s.head_dim});
    p.out_max = std::max({s.width, 4 * s.head_dim, 2 * p.ffn_slice, p.logit_columns});
  };
  size_shared_rows();
  // Groups of 4 adjacent columns per invocation, a load each per row, where every matrix's columns
  // (and a head, so that an invocation's columns stay in one matrix) divide into them. CPU drivers:
  // loads cost a loop over the lanes there; int8 weights take 16 (four words per row: 385M decode
  // on lavapipe 210 -> 150 ms per token), f32 and f16 ones 4 from storage buffers (16 measured 1.1x
  // and 2x slower), 16 as texels (below).
  // GPUs: 4, so that a product's few columns leave 4x as many invocations to split its rows (a
  // token's time is the serial walk of each invocation over its rows).
  auto divides = [&](uint32_t c) {  // adjacent columns per invocation
    return s.head_dim % c == 0 && s.width % c == 0 && s.ffn % c == 0 && s.vocab % c == 0 && p.ffn_slice % c == 0 &&
           p.logit_columns % c == 0;
  };
  // Whether every product's column blocks divide into passes of whole subgroups at c columns per
  // invocation; the FFN slices and logit columns whole too, so the last workgroup's blocks do.
  auto whole_subgroups = [&](uint32_t c) {
    const uint32_t pass = c * p.workgroup;
    return s.head_dim % pass == 0 && s.width % pass == 0 && p.ffn_slice % pass == 0 && p.logit_columns % pass == 0 &&
           s.ffn % p.ffn_slice == 0 && s.vocab % p.logit_columns == 0;
  };
  // CPU drivers: dense f32 weights through texel views (vk/texel_views.hpp), where the device backs
  // them, every matrix fits one view and the widths divide into whole texels.
  const bool texels_fit = s.dense_f32 && divides(4) && texel_views_fit(d, false, s.largest_weight / 4, 5);
  if (d.forced.lm_decode_texel.value_or(false) && !texels_fit && s.int8_group == 0 && !s.f16_words)
    return per_op(
        "the forced texel weights need dense f32 or int8 weights, widths in whole texels and views that "
        "hold them");
  p.texel_weights = d.forced.lm_decode_texel.value_or(d.family == Family::kCpu) && texels_fit;
  // f16 weights, f32 activations: their words (8 columns per texel of 4 words) through texel views
  // where the device backs u32 texels and one view holds the largest matrix (5 in the mixer).
  const bool f16_words_fit = s.f16_words && s.f32_activations && d.texel_u32x4 &&
                             s.largest_weight / 8 <= d.max_texels && d.max_texel_bindings >= 5;
  const bool f16_texels = f16_words_fit && d.forced.lm_decode_texel.value_or(d.family == Family::kCpu);
  if (const std::optional<uint32_t> forced = d.forced.lm_decode_columns) {
    if (!divides(*forced))
      return per_op("the forced " + std::to_string(*forced) + " columns per invocation do not divide the widths");
    p.lane_groups = *forced / 4;
  } else {
    // CPU drivers with texel weights: the most columns per invocation whose subgroups stay within
    // one matrix, so that the input rows can come by shuffles (below). Without them a lane's 16
    // columns spread a subgroup over two or three matrices (a head of 32 is four lanes), and
    // lavapipe runs a divergent subgroup's branches one after another, each for every lane.
    // Otherwise 16 there too: a product's rows are then walked once instead of four times, which a
    // texel fetch rewards where a strided walk from memory does not (lavapipe, the default model's
    // FFN on one thread with its weights cold: 1.09-1.39 ms per call from storage buffers, 1.40-1.43
    // as texels 4 columns per invocation, 0.88-0.91 as texels 16).
    // f16 words read as texels take 16 as well: 8 or 16 columns are whole texels of words, and 16
    // walk a row once (tools/rill/bench-lm-lavapipe/FINDINGS.md: f16 decoding).
    const bool wide = d.family == Family::kCpu && (s.int8_group > 0 || p.texel_weights || f16_texels);
    for (uint32_t g = 4; p.texel_weights && d.family == Family::kCpu && g >= 1 && p.lane_groups == 0; g /= 2)
      if (divides(4 * g) && whole_subgroups(4 * g)) p.lane_groups = g;
    for (uint32_t g = wide ? 4 : 1; g >= 1 && p.lane_groups == 0; g /= 2)
      if (divides(4 * g)) p.lane_groups = g;
  }
  // mv_in, mv_out, mv_split (a group's columns per invocation), the reduction's partials, the
  // softmax weights, the mixer's partial sums (a head's worth where the workgroup is narrower than
  // the head), o and the softmax sums.
  auto shared_bytes = [&] {
    const uint64_t head_past_workgroup = s.head_dim > p.workgroup ? s.head_dim - p.workgroup : 0;
    return 4ull * (p.in_max + p.out_max + (3ull + std::max(4 * p.lane_groups, 1u)) * p.workgroup + 2ull * s.head_dim +
                   head_past_workgroup);
  };
  if (shared_bytes() > d.shared_bytes && !d.forced.lm_decode_columns) p.lane_groups = 0;  // a phone's 16 KiB
  // int8 weights, 16 columns per invocation (a row's four words, one texel of u32), f32 activations:
  // the words and scales through texel views where the device backs them and they hold the largest
  // matrix (10 views in the mixer). The 385M configuration's decoding on lavapipe:
  // tools/rill/bench-lm-lavapipe/FINDINGS.md. f16 weights at 8 or 16 columns per invocation: one or two whole texels of
  // words per row. int4 the same at 16 columns (two words of a row, half a texel: the widths are multiples of 16).
  const bool words_fit = (s.int8_group > 0 && s.f32_activations && p.lane_groups == 4 && d.texel_u32x4 &&
                          d.texel_f32x4 && texel_views_fit(d, false, s.largest_weight / 4, 10)) ||
                         (f16_words_fit && (p.lane_groups == 2 || p.lane_groups == 4));
  if (d.forced.lm_decode_texel.value_or(false) && (s.int8_group > 0 || s.f16_words) && !words_fit)
    return per_op(
        "the forced texel weights need int8 or int4 words of 16 columns per invocation or f16 words of 8 or 16, f32 "
        "activations and views that hold them");
  p.texel_words = d.forced.lm_decode_texel.value_or(d.family == Family::kCpu) && words_fit;
  // Texel kernels on CPU drivers take their input rows by subgroup shuffles where every product is
  // whole passes of a subgroup's columns (x_shuffle, below): dense f32 and f16 weights. int8 ran
  // slower with them (385M on lavapipe, profiled: FFN 1.49-1.50 -> 1.57-1.60 ms per call, logits
  // 9.1 -> 11.3-17.9), its rows' byte extraction outweighing the shared loads the shuffles save;
  // f16's FFN went 3.05-3.15 -> 2.26 ms and logits 24-28 -> 15 (records in
  // tools/rill/bench-lm-lavapipe/, decode-profile-385m-*-shuffle-*).
  const bool shuffle = d.forced.lm_decode_shuffle.value_or(true) && (p.texel_weights || (p.texel_words && s.f16_words));
  // For f16 words FFN slices and logit columns are cut into whole subgroup passes where the first
  // choice leaves them partial (the largest such not above it, else the smallest). The 385M
  // configuration at 16 columns per lane: slices of 256 instead of 352 and 640 logits per
  // workgroup instead of 1,024. Dense f32 weights at 16 columns ran slower so (385M decoding
  // 203 / 221 -> 256 / 290 ms per token, `385m-f32-decode-shuffle-*`): they shuffle only where
  // their first choice is whole (4 columns per lane, heads of 32).
  if (shuffle && p.texel_words && d.family == Family::kCpu && p.lane_groups > 0 &&
      !whole_subgroups(4 * p.lane_groups)) {
    const uint32_t pass = 4 * p.lane_groups * p.workgroup;
    auto whole = [&](uint32_t total, uint32_t first) {
      for (uint32_t c = first / pass * pass; c >= pass; c -= pass)
        if (total % c == 0) return c;
      for (uint32_t c = (first / pass + 1) * pass; c <= total; c += pass)
        if (total % c == 0) return c;
      return first;
    };
    const LmDecodePlan first = p;
    p.ffn_slice = whole(s.ffn, p.ffn_slice);
    p.logit_columns = whole(s.vocab, p.logit_columns);
    size_shared_rows();
    if (shared_bytes() > d.shared_bytes) p = first;  // a limit profile's 16 KiB
  }
  p.x_shuffle = shuffle && register_kernels_fit(d) && d.fixed_subgroup && d.subgroup >= 8 &&
                p.workgroup == d.subgroup && p.lane_groups > 0 && whole_subgroups(4 * p.lane_groups);
  // GPUs: a product's weight loads four rows at a time, one wait on memory per four rows of an
  // invocation's serial walk (not yet timed against one: tools/gpu-check.sh decode_sweep). CPU
  // drivers one, as before: lavapipe showed no difference beyond its noise (default model, rill
  // bench --op lm --quick, 1 and 4 alternated three times: 7.1-9.5 and 4.3-9.4 ms per token,
  // tools/rill/bench-lm-lavapipe/bench-lm-decode-rows-{1,4}-run{1,2,3}.json).
  p.row_batch = d.forced.lm_decode_rows.value_or(d.family == Family::kGpu ? 4 : 1);
  if (shared_bytes() > d.shared_bytes)
    return per_op("the fused kernels need " + std::to_string(shared_bytes()) + " bytes of shared memory");
  const uint32_t bindings = 9 + 5 * s.bindings_per_weight;  // the mixer's: the most of the three
  if (bindings > d.max_storage_buffers)
    return per_op("the fused mixer binds " + std::to_string(bindings) + " storage buffers; the device allows " +
                  std::to_string(d.max_storage_buffers));
  // Each kernel's loop iterations per invocation (the driver's limit counts them all): a product
  // of n columns over `rows` is ceil(n / columns per pass) passes over the rows; the prologues sum
  // partial rows; softmax attention walks its keys a tile at a time.
  const uint64_t wg = p.workgroup, per_pass = wg * std::max(4 * p.lane_groups, 1u);
  // int8 weights add an iteration per group of rows; a split product sums up to wg slices.
  auto product = [&](uint64_t n, uint64_t rows) {
    return ceil_div(n, per_pass) * (rows + (s.int8_group > 0 ? ceil_div(rows, s.int8_group) : 0)) + wg + 4;
  };
  auto prologue = [&](uint64_t parts) { return ceil_div(s.width, wg) * (parts + 3) + 16; };
  const uint64_t slices = ceil_div(s.ffn, p.ffn_slice), feature = s.lrpe ? 2 * s.head_dim : s.head_dim;
  const uint64_t mixer = std::max(feature * ceil_div(s.head_dim, wg),
                                  (ceil_div(s.max_keys, wg) + 1) * (s.head_dim + wg * ceil_div(s.head_dim, wg)));
  const uint64_t loops =
      std::max({prologue(slices) + product(4 * s.head_dim, s.width) + mixer + product(s.width, s.head_dim),
                prologue(s.heads) + product(2 * p.ffn_slice, s.width) + product(s.width, p.ffn_slice),
                prologue(slices) + product(p.logit_columns, s.width)});
  if (loops > d.loop_budget) return per_op("the fused kernels' loops exceed the device's loop limit");
  // A workgroup per FFN slice and per block of logits (a dispatch per block of the head), all
  // along x: a vocabulary of 2^20 in one block at 16 logits per workgroup passes 65535, the limit
  // of most GPUs but NVIDIA's.
  const uint64_t logit_groups = ceil_div(s.widest_head_block > 0 ? s.widest_head_block : s.vocab, p.logit_columns);
  if (slices > d.max_groups_x || logit_groups > d.max_groups_x)
    return per_op("the fused kernels' " + std::to_string(std::max(slices, logit_groups)) +
                  " workgroups exceed the device's " + std::to_string(d.max_groups_x) + " in x");
  p.fused = true;
  return p;
}

Result<LmDecodePlan> lm_decode(const DeviceTraits& d, const LmDecodeShape& s) {
  // Tuned choices where they fit: a tuned grid or column count that leaves the per-op graph where
  // the plan's own sizes fuse does not.
  if (const auto tuned = tuned_traits(d)) {
    auto p = lm_decode(*tuned, s);
    if (p.is_ok() && (p->fused || tuned->forced.lm_decode_fused == false || !fused_decode_plan(d, s).fused)) {
      if (!p->fused && tuned->forced.lm_decode_fused == false && d.forced.lm_decode_fused != false)
        p->per_op_reason = "tuned";  // the tuning file's choice, not a forced one
      return p;
    }
  }
  // The fused kernels' parameters with the per-op graph forced would be ignored: refused by name.
  const PlanOverrides& f = d.forced;
  if (f.lm_decode_fused == false &&
      (f.lm_decode_grid || f.lm_decode_columns || f.lm_decode_rows || f.lm_decode_texel || f.lm_decode_shuffle))
    return invalid_argument(
        "lm decode: lm_decode=per-op leaves no fused kernels for the lm_decode_grid, lm_decode_columns, "
        "lm_decode_rows, lm_decode_weights or lm_decode_shuffle given");
  LmDecodePlan p = fused_decode_plan(d, s);
  // Forcing a fused kernel's parameter forces the fused kernels too: refused by name, never ignored.
  if ((d.forced.lm_decode_fused == true || d.forced.lm_decode_columns || d.forced.lm_decode_rows) && !p.fused &&
      d.forced.lm_decode_fused != false)
    return invalid_argument("lm decode: the forced fused kernels do not fit: " + p.per_op_reason);
  if (d.forced.lm_decode_fused == false) {
    p.fused = false;
    p.per_op_reason = "forced";
  }
  return p;
}

uint32_t wait_spin_us(const DeviceTraits& d) {
  return d.forced.wait_spin_us.value_or(d.family == Family::kGpu && !d.unified_memory ? 200 : 0);
}

uint32_t lm_prefill_segment(const DeviceTraits& d) {
  // H200, default model (rill bench --op lm --lm-segment): 2048 positions ran 0.78-0.92 M tokens/s
  // at 64K-1M tokens in 55 MiB, 8192 ran 1.21-1.30 M in 172 MiB. CPU drivers gain nothing from
  // longer segments. Integrated and mobile GPUs keep 2048: a segment's activations come out of the
  // system's memory there (the 385M configuration's are about 230 MB per 2048 positions in f32),
  // and their few cores are filled by the shorter products.
  return d.family == Family::kGpu && !d.unified_memory ? 8192 : 2048;
}

bool icl_sample_per_token(const DeviceTraits& d, uint32_t tokens) {
  return d.family == Family::kGpu && tokens <= 65535;
}

Result<IclLayersPlan> icl_layers(const DeviceTraits& d, const IclLayersShape& s) {
  if (const auto tuned = tuned_traits(d))  // tuned choices where they fit
    if (auto p = icl_layers(*tuned, s); p.is_ok()) return p;
  IclLayersPlan p;
  const uint64_t mat = uint64_t(s.width) * s.width, token_elems = uint64_t(s.tokens) * s.width;
  // The backward's shared arrays per task (icl_layer_bwd_wg.comp; the forward's are fewer): tokens,
  // gradient and input gradient, four matrices, the layer's parameter gradients, two rows; and the
  // staged parameters. (Five matrices were counted before: at the Vladymyrov setting 8 tasks took
  // 47,080 bytes and were refused at 50,952, past NVIDIA's 49,152.)
  auto shared_bytes = [&](uint64_t tasks) {
    return (tasks * (3 * token_elems + 4 * mat + s.layer_params + 2 * s.width) + s.layer_params) * 4;
  };
  // Invocations per task: one per matrix entry up to 128 for a workgroup of one task. Several tasks
  // share a workgroup of up to 256 invocations, at least a subgroup each, so each workgroup's
  // loads and stores of the task-minor arrays cover whole runs of neighbouring tasks.
  const uint32_t lanes_min = std::min(std::max<uint32_t>(d.subgroup, 32), d.max_invocations);
  // Forced, each invocation computes blocks of block x block outputs of the products
  // (icl_wg_common.glsl's ICL_BLOCKS): a task takes an invocation per block of its square matrices
  // (the tokens' products go round a few times), a subgroup can span tasks, and a workgroup still
  // holds at least lanes_min invocations.
  const uint32_t block = d.forced.icl_block.value_or(1);
  const uint64_t blocks = ceil_div(s.width, block) * ceil_div(s.width, block);
  uint32_t lanes_least = lanes_min;
  if (block > 1) {
    lanes_least = 1;
    while (lanes_least < 128 && lanes_least < blocks) lanes_least *= 2;
    lanes_least = std::min(lanes_least, lanes_min);
  }
  auto lanes_for = [&](uint32_t tasks) {
    uint32_t lanes = lanes_least;
    if (block > 1) {
      while (lanes < 128 && uint64_t(lanes) * tasks < lanes_min) lanes *= 2;
      return lanes;
    }
    while (lanes < 128 && lanes < mat && uint64_t(lanes) * 2 * tasks <= std::min(256u, d.max_invocations)) lanes *= 2;
    return lanes;
  };
  uint32_t tasks = 1;
  if (const auto forced = d.forced.icl_tasks_per_workgroup) {
    tasks = *forced;
    if (uint64_t(tasks) * lanes_least > d.max_invocations || shared_bytes(tasks) > d.shared_bytes)
      return invalid_argument("icl: " + std::to_string(tasks) +
                              " tasks per workgroup do not fit the device's workgroup or shared memory");
  } else {
    // Unforced, a workgroup leaves an eighth of the shared memory free. That keeps the defaults
    // the H200 ran: Ahn's 8 tasks (19.7 KB), Vladymyrov's 4 with FULL (24.0 KB; the grid of 21
    // ran 12,044 model-steps/s at 2 and 14,165 at 4 in run 9) and 8 with DIAG (38.5 KB). FULL's 8
    // (47.1 KB of NVIDIA's 48 KiB: half the workgroups a multiprocessor holds) are untimed, forced
    // by `icl_tasks_per_workgroup=8`.
    while (tasks < 64 && uint64_t(tasks) * 2 * lanes_least <= std::min(256u, d.max_invocations) &&
           shared_bytes(tasks * 2) <= d.shared_bytes / 8 * 7)
      tasks *= 2;
  }
  p.tasks_per_workgroup = tasks;
  p.workgroup = lanes_for(tasks);
  p.output_block = block;
  const bool fits = shared_bytes(tasks) <= d.shared_bytes;
  // A task per invocation keeps its task's arrays private (icl_layer_bwd.glsl: the tokens and their
  // gradient, A, B, dA, dB and a product, a row). A GPU spills them to per-invocation scratch,
  // which drivers cap: NVIDIA's 512 KiB (other drivers' caps are not known here).
  const uint64_t private_bytes = (2 * token_elems + 5 * mat + s.width) * 4;
  constexpr uint64_t kGpuPrivateBytes = 512 << 10;
  const bool private_fits = d.family != Family::kGpu || private_bytes <= kGpuPrivateBytes;
  auto too_large = [&] {
    return invalid_argument("icl: a task of width " + std::to_string(s.width) + " and " + std::to_string(s.tokens) +
                            " tokens needs " + std::to_string(shared_bytes(1)) +
                            " bytes of shared memory (the device has " + std::to_string(d.shared_bytes) + ") or " +
                            std::to_string(private_bytes) + " bytes of private memory per invocation (a GPU at most " +
                            std::to_string(kGpuPrivateBytes) + "): a smaller d or n");
  };
  if (d.forced.icl_workgroup_per_task == true && !fits)
    return invalid_argument("icl: the forced workgroup layer kernels need " + std::to_string(shared_bytes(tasks)) +
                            " bytes of shared memory; the device has " + std::to_string(d.shared_bytes));
  if (d.forced.icl_workgroup_per_task) {
    if (!*d.forced.icl_workgroup_per_task && !private_fits) return too_large();
    p.workgroup_per_task = *d.forced.icl_workgroup_per_task;
    p.reason = "forced";
  } else if (d.family == Family::kCpu) {
    p.reason = "CPU driver: a task per SIMD lane";
  } else if (!fits) {
    if (!private_fits) return too_large();
    p.reason = "a task's matrices exceed the shared memory";
  } else if (!private_fits) {
    p.workgroup_per_task = true;
    p.reason = "GPU: a workgroup per task (a task's arrays exceed an invocation's private memory)";
  } else if ((s.model_tasks > 0 ? s.model_tasks : s.tasks) >= 32768) {
    // Enough tasks fill a GPU with one per invocation, whose loads of the element-major batch are
    // coalesced. H200, Vladymyrov setting, run 4: 21 models (43008 tasks) ran 3.37 ms per step a
    // task per invocation against 3.96 a workgroup per task; one model (2048 tasks) 0.91 against
    // 0.17 ms. Decided per model: a grid's models run the kernels each runs alone (the same bits;
    // in run 7 a model alone, a workgroup per task, took 0.087 ms a step, the grid of 21 a task per
    // invocation 1.93).
    p.reason = "GPU, a large batch: a task per invocation";
  } else {
    p.workgroup_per_task = true;
    p.reason = "GPU: a workgroup per " + std::to_string(tasks) + (tasks == 1 ? " task" : " tasks");
  }
  // Layers per dispatch: on GPUs all of them where one invocation may loop that long (the
  // workgroup kernels loop less than a task per invocation does). CPU drivers keep one: there a
  // dispatch costs little next to a layer, and lavapipe ran the fused forward 2-14 % slower
  // (Vladymyrov setting, tools/rill/bench-icl-lavapipe/fused-layers-profile.txt).
  uint64_t per = std::max<uint32_t>(s.layers, 1);
  if (s.layer_iterations > 0 && d.loop_budget != UINT64_MAX)
    per = std::clamp<uint64_t>(d.loop_budget / s.layer_iterations, 1, per);
  if (d.forced.icl_layers_per_dispatch)
    per = std::min<uint64_t>(per, *d.forced.icl_layers_per_dispatch);
  else if (d.family == Family::kCpu || d.short_dispatches)  // mobile GPUs: a watchdog kills long dispatches
    per = 1;
  p.layers_per_dispatch = uint32_t(per);
  p.query_top_layer = d.forced.icl_query_top_layer.value_or(true);
  // Texel reads in the per-task layers, where the largest array (every layer's tokens, A and B, or
  // the per-task gradients) fits one view. On lavapipe each storage-buffer load loops over the SIMD
  // lanes, and the backward's loads were a third of its time; texel fetches made it about 15 %
  // faster at the Vladymyrov setting (tools/rill/bench-icl-lavapipe/README.md), the forward's reads
  // of its input tokens 1.2-1.3x (.ci/timing/icl-forward-texels.txt). The gradient reduction reads
  // the per-task gradients the same way where the layers do: 3.8-4.3x faster there
  // (tools/rill/bench-icl-lavapipe/grad-reduce-texels.txt).
  const uint64_t largest = std::max({uint64_t(s.layers + 1) * token_elems, uint64_t(s.layers) * 2 * mat,
                                     uint64_t(s.layers) * s.layer_params}) *
                           s.tasks;
  p.texel_reads = d.forced.icl_texel.value_or(true) && !p.workgroup_per_task && d.family == Family::kCpu &&
                  s.tasks > 0 && texel_views_fit(d, false, ceil_div(largest, 4), 3);
  return p;
}

}  // namespace rill::ops::plan
