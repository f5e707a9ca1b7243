// Kernel plans of attention: block attention and linear attention in every form (kernel_plan.hpp).
#include <algorithm>
#include <bit>

#include "kernel_plan.hpp"
#include "kernel_plan_util.hpp"

namespace rill::ops::plan {
namespace {

// Loop iterations one invocation of the serial chunked kernels runs per chunk (the larger of the
// forward and backward kernels): the scores, then for each owned column the inter-chunk,
// intra-chunk and update loops.
uint64_t serial_iterations_per_chunk(const LinearAttentionShape& s, uint32_t workgroup) {
  const uint64_t c = s.chunk, inner = std::max(s.dk, s.dv), owned = ceil_div(inner, workgroup);
  return ceil_div(c * c, workgroup) * (inner + 1) + owned * (c * (inner + (c + 1) / 2 + 2) + inner * (c + 1) + 1) + 4;
}

// Scratch the parallel chunked forward may hold for chunk states (a window of chunks at a time).
constexpr uint64_t kParallelScratchBytes = 64ull << 20;
// Scratch the CPU block-attention backward may hold for dS (a window of blocks at a time).
constexpr uint64_t kBlockScoresBytes = 16ull << 20;

}  // namespace

namespace {

// The tile width of the GPU block-attention kernels: shared memory holds the block's scores, a
// TILE-wide slice of the block's rows and a TILE x 128 tile (heads up to 128), plus `extra` floats.
// 0 where even tiles of 4 do not fit.
uint32_t block_attention_tile(const DeviceTraits& d, uint32_t block, uint64_t extra) {
  // Scores and the row tile over the block rounded up to whole 4-row blocks, in rows of 4-word
  // vectors padded by one (block_attention_tiles.glsl says why).
  auto shared_bytes = [&](uint64_t tile) {
    const uint64_t block4 = ceil_div(block, 4) * 4;
    return 4 * (block4 * (block4 + 4) + block4 * (tile + 4) + tile * 128 + extra);
  };
  // A forced depth is kept or refused (0: the op says so), never silently changed; a tuned one is
  // kept where it fits.
  if (d.forced.block_tile) return shared_bytes(*d.forced.block_tile) <= d.shared_bytes ? *d.forced.block_tile : 0;
  if (d.tuned && d.tuned->block_tile && shared_bytes(*d.tuned->block_tile) <= d.shared_bytes)
    return *d.tuned->block_tile;
  uint32_t tile = 16;
  while (tile > 4 && shared_bytes(tile) > d.shared_bytes) tile /= 2;
  return shared_bytes(tile) <= d.shared_bytes ? tile : 0;
}

// Whether the GPU block-attention kernels walk a product's operand tiles once for all of its rounds
// of result blocks (block_attention_tiles.glsl's FUSE_ROUNDS). The flash kernels hold every round's
// accumulators over their whole walk anyway, so one walk for all of them only drops work: the
// operand's tile loads, barriers and shared reads of every round but one. The tiled kernels hold
// one round at a time; fused, heads of 128 hold two at 256 invocations (32 accumulators; four at
// 128) for half the walks of P V, untimed on a GPU (tools/gpu-check.sh block_sweep times it).
bool fused_rounds(const DeviceTraits& d, bool flash) { return chosen(d).block_fused_rounds.value_or(flash); }

// The GPU block-attention kernels' workgroup: 256 invocations, or 128 where forced or tuned (twice
// the rounds of result blocks per product: more workgroups per multiprocessor, each with more
// registers), never past the device's limit.
uint32_t block_workgroup(const DeviceTraits& d) {
  return std::min(chosen(d).block_workgroup.value_or(256u), d.max_invocations);
}

}  // namespace

namespace {

// Whether a CPU-driver register kernel reads its rows as 4-element texels: rows of whole texels, a
// device that backs texels of the storage type, `bindings` texel views of at most max_texels each.
bool block_texel_rows(const DeviceTraits& d, const BlockAttentionShape& s, uint32_t bindings) {
  const uint64_t widest = std::max(s.dk, s.dv);
  return chosen(d).block_texel.value_or(true) && s.dk % 4 == 0 && s.dv % 4 == 0 &&
         texel_views_fit(d, s.f16, s.rows * widest / 4, bindings);
}

}  // namespace

BlockAttentionPlan block_attention_forward(const DeviceTraits& d, const BlockAttentionShape& s) {
  BlockAttentionPlan p;
  const uint32_t block = s.block;
  if (d.family == Family::kGpu && block <= 64) {
    // Shared memory also holds the softmax's partial row maxima and sums, one per invocation.
    p.tile = block_attention_tile(d, block, block_workgroup(d));
    p.tiled = p.tile > 0;
    p.workgroup = p.tiled ? block_workgroup(d) : 0;
    p.fused_rounds = p.tiled && fused_rounds(d, false);
    return p;
  }
  if (d.family == Family::kGpu) {
    // Past 64 a block's scores outgrow shared memory: 64-row tiles of them (the generic kernel, a
    // query row per invocation with its accumulators spilled, ran blocks of 128 and 256 at 1 % of
    // an H200's FMA peak, 0.05-0.16x SDPA: tools/rill/bench-h200/run9-0652bae/block.json). Shared
    // memory also holds the partial row maxima and sums and each row's running maximum, sum and
    // factor.
    p.tile = block_attention_tile(d, 64, block_workgroup(d) + 3 * 64);
    p.flash = p.tile > 0;
    p.workgroup = p.flash ? block_workgroup(d) : 0;
    p.fused_rounds = p.flash && fused_rounds(d, true);
    if (p.flash) return p;
  }
  if (!register_kernels_fit(d)) return p;
  p.register_kernel = true;
  p.subgroup = d.subgroup;
  // Several rows per lane share each key and value load: 4 measured best of 1, 2, 4 on lavapipe
  // (block 64, D 64: 18%, 24%, 38% of the FMA peak non-causal).
  p.rows_per_lane = block > 2 * d.subgroup ? 4 : block > d.subgroup ? 2 : 1;
  // Keys per step: one softmax rescale and one read-modify-write of the accumulators (which live in
  // memory on lavapipe) per step. Lavapipe, N 4K, 4 heads of 64, texel rows, causal / non-causal
  // f32: 1 key 7.8 / 9.8 ms, 2 keys 6.6 / 8.4; 4 and 8 no faster, and the unrolled step grows past
  // the instruction cache (one step of 8 keys was 150 KB of code).
  p.keys_per_step = d.forced.block_keys              ? *d.forced.block_keys
                    : d.tuned && d.tuned->block_keys ? *d.tuned->block_keys
                                                     : 2;
  p.texel_rows = block_texel_rows(d, s, 3);
  return p;
}

BlockAttentionBackwardPlan block_attention_backward(const DeviceTraits& d, const BlockAttentionShape& s) {
  BlockAttentionBackwardPlan p;
  const uint32_t block = s.block, dk = s.dk, dv = s.dv;
  // Past heads of 64, lavapipe took 4-13 s to compile each register-kernel pipeline (its unrolled
  // arrays grow with Dk and Dv): those run the generic kernels.
  if (register_kernels_fit(d) && dk <= 64 && dv <= 64) {
    p.register_kernel = true;
    p.subgroup = d.subgroup;
    // Rows per lane on lavapipe (block 64, D 64, N 4K, 4 heads, causal f32): 2 rows ran 2.5x as fast
    // as 1, 4 rows 10-20 % faster than 2 but compiled 2.6x as long (84 s against 32 s for the
    // bench's eight pipelines): at most 256 values of Dk + Dv per lane and row kind.
    p.rows_per_lane = block > 2 * d.subgroup ? 4 : block > d.subgroup ? 2 : 1;
    while (p.rows_per_lane > 1 && p.rows_per_lane * (uint64_t(dk) + dv) > 256) p.rows_per_lane /= 2;
    // Two rows per step as in the forward ran 2.2x slower here (lavapipe, N 4K, D 64, f32).
    p.texel_rows = block_texel_rows(d, s, 5);
    // dq from the key groups' dS: 5 products per (query, key) pair instead of 7. Blocks whose dS
    // alone outgrows the scratch (thousands of heads) take the query groups.
    p.scores_width = round_up(block, p.subgroup * p.rows_per_lane);
    const uint64_t block_scores_bytes = 4 * s.heads * uint64_t(p.scores_width) * p.scores_width;
    const uint64_t blocks = ceil_div(s.rows / std::max<uint64_t>(s.heads, 1), block);
    p.dq_from_scores = chosen(d).block_dq_from_scores.value_or(true) && block_scores_bytes <= kBlockScoresBytes;
    if (p.dq_from_scores)
      p.scores_blocks =
          uint32_t(std::clamp<uint64_t>(kBlockScoresBytes / block_scores_bytes, 1, std::max<uint64_t>(blocks, 1)));
    p.scores_texels =
        p.dq_from_scores && p.texel_rows && d.max_texel_bindings >= 6 && kBlockScoresBytes / 16 <= d.max_texels;
    return p;
  }
  if (d.family != Family::kGpu) return p;
  // Shared memory also holds the rows' deltas; past 64, tiles of 64 rows (the forward says why).
  p.tile = block_attention_tile(d, std::min(block, 64u), std::min(block, 64u));
  (block <= 64 ? p.tiled : p.flash) = p.tile > 0;
  p.workgroup = p.tile > 0 ? block_workgroup(d) : 0;
  p.fused_rounds = p.tile > 0 && fused_rounds(d, p.flash);
  return p;
}

Result<SerialChunks> linear_attention_serial(const DeviceTraits& d, const LinearAttentionShape& shape) {
  // A smaller chunk changes only the rounding (the same sums, grouped differently).
  LinearAttentionShape s = shape;
  while (s.chunk > 1 && serial_iterations_per_chunk(s, 64) > d.loop_budget) s.chunk /= 2;
  const uint64_t per_chunk = serial_iterations_per_chunk(s, 64);
  if (per_chunk > d.loop_budget)
    return out_of_range("linear_attention: one position (heads of " + std::to_string(s.dk) + " x " +
                        std::to_string(s.dv) + ") needs about " + std::to_string(per_chunk) +
                        " loop iterations per invocation; the device stops loops after " +
                        std::to_string(d.loop_budget * 8 / 7));
  // A GPU watchdog (mobile) kills long dispatches, and a driver loop limit (lavapipe) bounds the
  // serial work of one invocation; elsewhere fewer, longer dispatches.
  uint64_t per = s.chunks_per_dispatch != 0 ? s.chunks_per_dispatch : (d.short_dispatches ? 16 : 256);
  per = std::min<uint64_t>(per, d.loop_budget / per_chunk);
  per = std::min<uint64_t>(per, ceil_div(s.n, s.chunk));  // no more than there are (a caller's bound may be any)
  return SerialChunks{s.chunk, uint32_t(std::max<uint64_t>(per, 1))};
}

namespace {

// CPU drivers: a scan with the state columns in registers (la_scan_cpu.glsl says why); it needs
// subgroup shuffles and Dk <= 256 (registers: Dk times the columns per lane stays at most 256). `fit` sizes the
// registers (the backward's square shape), `s` has the real widths.
LinearAttentionPlan register_scan_plan(const DeviceTraits& d, const LinearAttentionShape& s,
                                       const LinearAttentionShape& fit) {
  LinearAttentionPlan p;
  p.algorithm = LinearAttentionAlgorithm::kRegisterScan;
  p.chunk = s.chunk;
  // Heads of 256 (LRPE's doubled features over heads of 128: the 385M TransNormerLLM's first
  // layer) take one column per lane; they ran the serial chunked kernel at about 1 % of the FMA
  // peak before, 16 % of that model's prefill on lavapipe (tools/rill/bench-lm-lavapipe/FINDINGS.md).
  p.columns_per_lane = fit.dk <= 64 ? 4 : fit.dk <= 128 ? 2 : 1;
  p.vector_width = p.columns_per_lane == 4 ? row_vector_width({s.dk, s.dv}) : 1;  // a lane's columns: one vector
  p.workgroup = d.subgroup;
  // Positions per dispatch: bounded by the driver's loop budget (chunks_per_dispatch, when given,
  // sets it in whole chunks, as for the chunked kernels).
  const uint64_t wanted = s.chunks_per_dispatch != 0 ? uint64_t(s.chunks_per_dispatch) * s.chunk : 16384;
  const uint64_t budget = d.loop_budget == UINT64_MAX ? UINT64_MAX : d.loop_budget - 64;
  p.positions_per_dispatch = std::max<uint64_t>(1, std::min<uint64_t>(wanted, budget));
  return p;
}

// GPUs: every chunk in parallel. A window of chunks holds its chunk states in scratch; the scan
// over a window runs one loop iteration per chunk, so the window is bounded by the loop budget,
// the scratch budget and the storage-buffer range. The tiled passes keep a chunk's scores and
// TILE-row tiles of heads up to 128 wide in shared memory. Empty when the device cannot run it.
std::optional<LinearAttentionPlan> parallel_plan(const DeviceTraits& d, const LinearAttentionShape& s) {
  constexpr uint64_t kMaxHeadDim = 128;  // MAX_D in la_par_common.glsl
  if (s.dk > kMaxHeadDim || s.dv > kMaxHeadDim || s.heads > 65535) return std::nullopt;
  const uint32_t wg = std::min(256u, d.max_invocations);
  // The output pass's register blocks, 4 x 4 (la_par_output.glsl's RB). Blocks of 8 x 8 in a
  // workgroup of a chunk's blocks ran 1.4-1.7x slower on an H200 (run 9) and were removed.
  const uint32_t block = 4;
  // Output blocks of row-block pairs (la_par_output.glsl's PAIRED: two blocks of 4 rows, 2 columns,
  // the chunk's h(C) resident for the causal product): forced only, untimed on a GPU.
  const bool paired = s.causal && d.forced.la_paired_rows.value_or(false);
  // A chunk's output blocks: units of rows (a row block, or a pair) times groups of columns.
  auto output_blocks = [&](uint64_t c, uint64_t dv) {
    const uint64_t blocks = ceil_div(c, block);
    return (paired ? ceil_div(blocks, 2) : blocks) * ceil_div(dv, paired ? block / 2 : block);
  };
  // Whether the output pass may fuse its scores into the walk of f(A) P_c (la_par_output.glsl's
  // FUSED): every invocation owns at most one scores block and one output block of a chunk.
  auto scores_fuse = [&](uint64_t c) {
    const uint64_t blocks = ceil_div(c, block);
    return blocks * blocks <= wg && output_blocks(c, s.dv) <= wg;
  };
  // Fused on GPUs: the forward ran 1.10-1.16x faster from N 16K on an H200, causal with heads of
  // 64 and the LM's 32 (tools/rill/bench-h200/run9-0652bae: plan_la_scores_fused.json against la_par.json).
  // CPU drivers keep the separate walk (their own kernels are not these; forced here, untimed).
  bool fuse_wanted = d.forced.la_fused_scores.value_or(d.family == Family::kGpu);
  // Shared memory of the output pass (la_par_output.glsl: the scores and the A tile in rows of 4-word
  // vectors padded by one, over the chunk rounded up to whole blocks of rows; the powers; the other
  // tile, in rows of g(B)'s or the head's width, which holds g(B)'s tile too when fused) and of the
  // states pass (a tile of each operand in rows of its width); paired, the other tile holds the
  // chunk's h(C) once the tiles are done. The backward's forms exchange the widths: the wider one
  // bounds every form.
  const uint64_t widest = std::max(s.dk, s.dv);
  auto shared_bytes = [&](uint64_t c, uint64_t tile) {
    const uint64_t cr = ceil_div(c, block) * block;
    const uint64_t tiles =
        tile * round_up(std::max(cr + 1, widest), 4) + (fuse_wanted && scores_fuse(c) ? tile * (cr + 1) : 0);
    const uint64_t other = std::max(tiles, paired ? cr * round_up(widest, 4) : 0);
    const uint64_t output = cr * (cr + 4) + c + 1 + cr * (tile + 4) + other;
    return 4 * std::max(output, c + tile * (s.dk + s.dv));
  };
  // Tiles of 8 rows (or inner slices): on the H200 they ran the forward, non-causal and backward
  // passes 1.25-1.4x faster than tiles of 16 from N 4K on (23 KiB of shared memory per workgroup
  // instead of 29, so more workgroups per multiprocessor), and 32 slower still
  // (tools/rill/bench-h200/run6-3587ad7). Where even that does not fit, narrower tiles first, then
  // shorter chunks (the same result, more chunks to scan): 64-row chunks' scores alone fill a
  // Mali-class GPU's 16 KiB.
  uint64_t c = d.forced.la_chunk ? std::min<uint64_t>(s.chunk, *d.forced.la_chunk) : s.chunk;
  uint32_t tile = d.forced.la_tile.value_or(8);
  // Unforced, the fused walk's extra tile never costs a narrower tile or a shorter chunk (a phone's
  // 16-32 KiB): there the scores keep their own walk.
  if (fuse_wanted && !d.forced.la_fused_scores && shared_bytes(c, tile) > d.shared_bytes) fuse_wanted = false;
  if (d.forced.la_tile && shared_bytes(c, tile) > d.shared_bytes) return std::nullopt;
  while (shared_bytes(c, tile) > d.shared_bytes) {
    if (tile > 4) {
      tile /= 2;
    } else if (c > 8) {
      c = (c + 1) / 2;
      tile = 8;
    } else {
      return std::nullopt;
    }
  }
  // The output pass's workgroup. With a forced chunk: as many invocations as a chunk has blocks of
  // scores or of outputs (in warps of 32), so that a shorter chunk leaves none idle, at most the
  // states pass's. Else the states pass's: a small GPU whose shared memory shortened the chunk
  // (untimed) keeps the invocations it had, which share the tiles' loads and hide latency.
  const uint64_t score_blocks = ceil_div(c, block) * ceil_div(c, block);
  const uint64_t out_blocks = output_blocks(c, std::max(s.dk, s.dv));
  const uint32_t out_wg =
      d.forced.la_chunk ? uint32_t(std::min<uint64_t>(wg, round_up(std::max(score_blocks, out_blocks), 32))) : wg;
  // Loop iterations of one invocation of the output pass (the longest): scores, then f(A) P_c and
  // the scores times h(C), per round of blocks (fused, fewer; paired, a walk of the chunk's
  // positions over h(C) resident).
  const uint64_t k_steps = ceil_div(s.dk, tile), s_steps = ceil_div(c, tile);
  const uint64_t score_rounds = ceil_div(score_blocks, out_wg);
  const uint64_t out_rounds = ceil_div(output_blocks(c, s.dv), out_wg);
  const uint64_t causal_loops =
      paired ? ceil_div(c * s.dv, out_wg) + c : s_steps * (ceil_div(tile * s.dv, out_wg) + tile);
  const uint64_t output_loops =
      score_rounds * k_steps * (2 * ceil_div(c * tile, out_wg) + tile) +
      out_rounds * (k_steps * (ceil_div(c * tile, out_wg) + ceil_div(tile * s.dv, out_wg) + tile) + causal_loops) + 8;
  if (output_loops > d.loop_budget) return std::nullopt;
  const uint64_t state_bytes = 4ull * s.dk * s.dv * s.heads;
  uint64_t window = std::min<uint64_t>(ceil_div(s.n, c), kParallelScratchBytes / state_bytes);
  window = std::min<uint64_t>(window, d.max_storage_range / state_bytes);
  window = std::min<uint64_t>(window, d.loop_budget / 4);
  window = std::min<uint64_t>(window, 65535);
  if (s.chunks_per_dispatch != 0) window = std::min<uint64_t>(window, s.chunks_per_dispatch);
  if (d.forced.la_window) window = std::min<uint64_t>(window, *d.forced.la_window);
  if (window < 1) return std::nullopt;
  LinearAttentionPlan p;
  p.algorithm = LinearAttentionAlgorithm::kChunkedParallel;
  p.chunk = uint32_t(c);
  p.chunks_per_dispatch = uint32_t(window);
  p.workgroup = wg;
  p.output_workgroup = out_wg;
  p.tile = tile;
  // Spans (la_par_common.glsl): a states workgroup walks SPAN chunks with the span's state in
  // registers, so the scan reads and writes a state per span instead of per chunk (the chunks'
  // states are written once and read once: a window's scan moved each chunk state four times). Up to
  // 8 chunks, while the states pass keeps 2,048 workgroups or more (about two rounds of a big
  // GPU's); the window is then a whole number of spans, so that every window's spans start at a
  // multiple of SPAN chunks. CPU drivers keep 1.
  p.span = 1;
  while (d.family == Family::kGpu && p.span < 8 && window / (2 * p.span) * s.heads >= 2048) p.span *= 2;
  if (d.forced.la_span) p.span = *d.forced.la_span;
  // Output blocks over strided columns unless forced: the grouped ones read P and h(C) as a 16-byte
  // aligned run of four words per inner step (one vector load where the compiler merges them)
  // instead of four strided words, as the GPU matmul's grouped layout does (1.07-1.16x on an H200).
  // Here they ran within 2 % of the strided ones on an H200 (run9-0652bae,
  // plan_la_columns_grouped.json), so strided stays the default.
  p.grouped_columns = d.forced.la_grouped_columns.value_or(false);
  // The scores fused into the walk over the inner dimension (GPUs, where they fit; fuse_wanted says
  // why): the output pass loads each slice of f(A) once instead of twice and takes 32 barriers per
  // chunk instead of 48 (C 64, D 64, tiles of 8), for 16 more accumulators per invocation.
  p.fused_scores = fuse_wanted && scores_fuse(c);
  p.paired_rows = paired;
  // With spans the scratch holds the window's chunk states and its spans' states: both within the
  // scratch budget and one storage-buffer range.
  const uint64_t scratch_states = std::min<uint64_t>(kParallelScratchBytes, d.max_storage_range) / state_bytes;
  if (p.span > 1)
    while (window > p.span && window + ceil_div(window, p.span) > scratch_states) window -= p.span;
  if (window > p.span) window = window / p.span * p.span;
  p.span = uint32_t(std::min<uint64_t>(p.span, window));
  if (p.span > 1 && window + ceil_div(window, p.span) > scratch_states) p.span = 1;  // a window of one span
  p.chunks_per_dispatch = uint32_t(window);
  // The states pass's loop iterations per invocation: per chunk of the span, its tiles' loads and
  // products, per round of 4 x 4 blocks.
  const uint64_t state_rounds = ceil_div(ceil_div(s.dk, 4) * ceil_div(s.dv, 4), wg);
  if (p.span * state_rounds * s_steps * (tile + 4) + 8 > d.loop_budget) {
    if (d.forced.la_span) return std::nullopt;
    p.span = 1;
  }
  // The state scan (la_par_scan.comp): on a GPU a serial walk over the window's chunks (or spans)
  // is a chain of memory latencies; cut into about sqrt(steps) runs it is 2 steps / runs + runs
  // long, for twice the traffic. At least 8 elements per workgroup, so that each run's loads fill
  // 32-byte sectors. A CPU driver has no latency to hide: lavapipe (the parallel form forced) ran
  // the scan 3-4.5x slower in runs (0.66 -> 2.9 ms at N 1K, 8.6 -> 28 ms at 16K), so it walks.
  const uint64_t scan_steps = ceil_div(window, p.span);
  p.scan_groups = 1;
  while (d.family == Family::kGpu && p.scan_groups < 32 && p.scan_groups * 2 * 8 <= wg &&
         4ull * p.scan_groups * p.scan_groups <= scan_steps)
    p.scan_groups *= 2;
  if (d.forced.la_scan_groups) p.scan_groups = std::min(*d.forced.la_scan_groups, wg);
  return p;
}

}  // namespace

namespace {

// The chunked forms, shared by the forward and the backward: parallel over chunks where the family
// is gpu (or it is forced) and the device has room for it, else the serial kernel. `parallel_shape`
// is the shape the parallel passes must fit.
Result<LinearAttentionPlan> chunked_plan(const DeviceTraits& d, const LinearAttentionShape& s,
                                         const LinearAttentionShape& parallel_shape, const char* op) {
  using Algorithm = LinearAttentionAlgorithm;
  const std::optional<Algorithm> forced = d.forced.linear_attention;
  const bool wanted = forced ? forced == Algorithm::kChunkedParallel : d.family == Family::kGpu;
  if (wanted) {
    if (auto p = parallel_plan(d, parallel_shape)) return *p;
    if (forced || d.forced.la_tile || d.forced.la_span)
      return invalid_argument(std::string(op) + ": the forced parallel chunked form" +
                              (d.forced.la_tile ? " with tiles of " + std::to_string(*d.forced.la_tile) : "") +
                              (d.forced.la_span ? " in spans of " + std::to_string(*d.forced.la_span) : "") +
                              " does not fit this device (shared memory, loop budget or scratch)");
  }
  // Too little shared memory, scratch or loop budget for a window (or forced): the serial kernel.
  LinearAttentionPlan p;
  p.algorithm = Algorithm::kChunkedSerial;
  RILL_ASSIGN_OR_RETURN(const SerialChunks serial, linear_attention_serial(d, s));
  p.chunk = serial.chunk;
  p.chunks_per_dispatch = serial.chunks_per_dispatch;
  return p;
}

// The register scan on CPU drivers (or forced) where it fits `fit` (the widest head of every pass),
// else the chunked forms.
Result<LinearAttentionPlan> scan_or_chunked(const DeviceTraits& d, const LinearAttentionShape& s,
                                            const LinearAttentionShape& fit, const char* op) {
  using Algorithm = LinearAttentionAlgorithm;
  const std::optional<Algorithm> forced = d.forced.linear_attention;
  const bool scan_fits = register_subgroup_fits(d) && fit.dk <= 256;
  if (forced == Algorithm::kRegisterScan) {
    if (!scan_fits)
      return invalid_argument(std::string(op) +
                              ": the forced register scan needs subgroups of a fixed 4 or more lanes and Dk <= 256");
    return register_scan_plan(d, s, fit);
  }
  if (!forced && d.family == Family::kCpu && scan_fits) return register_scan_plan(d, s, fit);
  return chunked_plan(d, s, fit, op);
}

}  // namespace

namespace {

// Whether the context forces any linear-attention choice.
bool forces_linear_attention(const PlanOverrides& f) {
  return f.linear_attention || f.la_tile || f.la_scan_groups || f.la_window || f.la_span || f.la_chunk ||
         f.la_grouped_columns || f.la_fused_scores || f.la_paired_rows;
}

// The tuned choices where they fit `fit` (refused choices fall back to the plan without them). A
// forced linear-attention choice sets the tuned ones of this op aside: a tuned form would hide it
// (la_tile=32 is meaningless under a tuned register scan) or its refusal where it does not fit.
Result<LinearAttentionPlan> tuned_or_planned(const DeviceTraits& d, const LinearAttentionShape& s,
                                             const LinearAttentionShape& fit, const char* op) {
  if (const auto tuned = tuned_traits(d); tuned && !forces_linear_attention(d.forced))
    if (auto p = scan_or_chunked(*tuned, s, fit, op); p.is_ok()) return p;
  return scan_or_chunked(d, s, fit, op);
}

}  // namespace

Result<LinearAttentionPlan> linear_attention_forward(const DeviceTraits& d, const LinearAttentionShape& s) {
  return tuned_or_planned(d, s, s, "linear_attention");
}

Result<LinearAttentionPlan> linear_attention_noncausal(const DeviceTraits& d, const LinearAttentionShape& s) {
  LinearAttentionShape flat = s;
  flat.causal = false;
  return tuned_or_planned(d, flat, flat, "linear_attention");
}

Result<LinearAttentionPlan> linear_attention_backward(const DeviceTraits& d, const LinearAttentionShape& s) {
  // The gradients exchange Dk and Dv: every pass must fit the wider of the two in both places.
  LinearAttentionShape square = s;
  square.dk = square.dv = std::max(s.dk, s.dv);
  return tuned_or_planned(d, s, square, "linear_attention_backward");
}

}  // namespace rill::ops::plan
