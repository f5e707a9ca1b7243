// Kernel plans (kernel_plan.hpp): the one place that reads device traits to choose kernels.
#include "kernel_plan.hpp"

#include <algorithm>
#include <charconv>

#include "access.hpp"
#include "sequence_impl.hpp"
#include "vk/quirks.hpp"

namespace rill::ops::plan {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint32_t round_up(uint64_t v, uint32_t multiple) { return uint32_t(ceil_div(v, multiple) * multiple); }

// Register kernels share values inside one subgroup by shuffles: the workgroup must be exactly one
// subgroup of at least 4 lanes.
bool register_kernels_fit(const DeviceTraits& d) {
  return d.family == Family::kCpu && d.subgroup >= 4 && d.subgroup <= d.max_invocations;
}

// Loop iterations one invocation of the serial chunked kernels runs per chunk (the larger of the
// forward and backward kernels): the scores, then for each owned column the inter-chunk,
// intra-chunk and update loops.
uint64_t serial_iterations_per_chunk(const LinearAttentionShape& s, uint32_t workgroup) {
  const uint64_t c = s.chunk, inner = std::max(s.dk, s.dv), owned = ceil_div(inner, workgroup);
  return ceil_div(c * c, workgroup) * (inner + 1) + owned * (c * (inner + (c + 1) / 2 + 2) + inner * (c + 1) + 1) + 4;
}

// Scratch the parallel chunked forward may hold for chunk states (a window of chunks at a time).
constexpr uint64_t kParallelScratchBytes = 64ull << 20;
// Scratch a matmul split along K may hold for its partial products.
constexpr uint64_t kSplitPartialBytes = 64ull << 20;

}  // namespace

std::string_view family_name(Family f) { return f == Family::kCpu ? "cpu" : "gpu"; }

std::string_view algorithm_name(LinearAttentionAlgorithm a) {
  switch (a) {
    case LinearAttentionAlgorithm::kRegisterScan:
      return "register scan";
    case LinearAttentionAlgorithm::kChunkedSerial:
      return "chunked, serial over chunks";
    case LinearAttentionAlgorithm::kChunkedParallel:
      return "chunked, parallel over chunks";
  }
  return "?";
}

DeviceTraits traits_of(const DeviceInfo& device, std::string_view family) {
  const vk::QuirkFlags q = vk::quirk_flags_for(device);
  DeviceTraits d;
  if (family == "cpu")
    d.family = Family::kCpu;
  else if (family == "gpu")
    d.family = Family::kGpu;
  else
    d.family = q.prefer_cpu_kernels ? Family::kCpu : Family::kGpu;
  d.subgroup = std::max(device.caps.subgroup_size, 1u);
  d.subgroup_arithmetic = device.caps.subgroup_arithmetic;
  d.max_invocations = device.caps.max_workgroup_invocations;
  d.shared_bytes = device.caps.shared_memory_bytes;
  // A margin below the driver's count for the loops an estimate leaves out.
  d.loop_budget = q.max_loop_iterations == 0 ? UINT64_MAX : uint64_t(q.max_loop_iterations) * 7 / 8;
  d.short_dispatches = q.short_dispatches;
  d.max_storage_range = device.caps.max_storage_buffer_range;
  d.max_storage_buffers = device.caps.max_storage_buffers_per_stage;
  d.cooperative_matrix_f16 = device.caps.cooperative_matrix_f16;
  // Without subgroup size control a driver need not say whether it varies the size (Intel's do).
  d.fixed_subgroup =
      device.caps.subgroup_size_control && device.caps.min_subgroup_size == device.caps.max_subgroup_size;
  return d;
}

namespace {

// The device's traits with its context's family and forced choices (validated at context creation).
DeviceTraits traits_in(const DeviceInfo& device, const rill::detail::ContextImpl& ctx) {
  DeviceTraits d = traits_of(device, ctx.pipelines->preferred_variant());
  if (auto forced = parse_overrides(ctx.kernel_plan); forced.is_ok()) d.forced = forced.value();
  return d;
}

}  // namespace

DeviceTraits traits_of(const Sequence& seq) { return traits_in(seq.device(), *rill::detail::Access::impl(seq).ctx); }

DeviceTraits traits_of(const Context& ctx) { return traits_in(ctx.device(), rill::detail::Access::impl(ctx)); }

Result<PlanOverrides> parse_overrides(std::string_view text) {
  PlanOverrides out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "icl_layers") {
      if (value != "per-task" && value != "per-workgroup")
        return invalid_argument("kernel plan: icl_layers is '" + std::string(value) +
                                "'; use per-task or per-workgroup");
      out.icl_workgroup_per_task = value == "per-workgroup";
      continue;
    }
    if (key == "la_tile" || key == "block_tile") {
      // The tile depth of the parallel linear-attention passes or of the GPU block-attention kernels
      // (rows or inner slices staged in shared memory per step).
      uint32_t n = 0;
      const bool parsed = std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc();
      if (!parsed || (n != 4 && n != 8 && n != 16 && n != 32))
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) +
                                "'; use 4, 8, 16 or 32");
      (key == "la_tile" ? out.la_tile : out.block_tile) = n;
      continue;
    }
    if (key == "la_scan_groups") {
      // Runs of chunks the parallel state scan cuts a window into (1: one serial walk).
      uint32_t n = 0;
      const bool parsed = std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc();
      if (!parsed || n < 1 || n > 64 || (n & (n - 1)) != 0)
        return invalid_argument("kernel plan: la_scan_groups is '" + std::string(value) +
                                "'; use a power of two from 1 to 64");
      out.la_scan_groups = n;
      continue;
    }
    if (key == "icl_tasks_per_workgroup" || key == "icl_layers_per_dispatch") {
      // Tasks per workgroup: a power of two up to 64 (a cohort's model stride is a multiple of 64).
      const bool tasks = key == "icl_tasks_per_workgroup";
      uint32_t n = 0;
      const bool parsed = std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc();
      if (!parsed || n < 1 || (tasks && (n > 64 || (n & (n - 1)) != 0)) || (!tasks && n > 1024))
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) + "'; use " +
                                (tasks ? "a power of two from 1 to 64" : "a count from 1 to 1024"));
      (tasks ? out.icl_tasks_per_workgroup : out.icl_layers_per_dispatch) = n;
      continue;
    }
    if (key == "lm_decode") {
      if (value != "fused" && value != "per-op")
        return invalid_argument("kernel plan: lm_decode is '" + std::string(value) + "'; use fused or per-op");
      out.lm_decode_fused = value == "fused";
      continue;
    }
    if (key == "matmul_tile") {
      // Accumulators per invocation of the GPU matmul (rows x columns; the workgroup is 16 x 16).
      const std::pair<uint32_t, uint32_t> tiles[] = {{2, 2}, {4, 4}, {8, 4}, {4, 8}, {8, 8}};
      const char* names[] = {"2x2", "4x4", "8x4", "4x8", "8x8"};
      bool found = false;
      for (size_t i = 0; i < 5; ++i)
        if (value == names[i]) out.matmul_tile = tiles[i], found = true;
      if (!found)
        return invalid_argument("kernel plan: matmul_tile is '" + std::string(value) +
                                "'; use 2x2, 4x4, 8x4, 4x8 or 8x8");
      continue;
    }
    if (key == "matmul_splits") {
      uint32_t n = 0;
      const bool parsed = std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc();
      if (!parsed || n < 1 || n > 64)
        return invalid_argument("kernel plan: matmul_splits is '" + std::string(value) + "'; use 1 to 64");
      out.matmul_splits = n;
      continue;
    }
    if (key == "matmul_layout") {
      if (value != "grouped" && value != "strided")
        return invalid_argument("kernel plan: matmul_layout is '" + std::string(value) + "'; use grouped or strided");
      out.matmul_grouped = value == "grouped";
      continue;
    }
    if (key == "matmul_coop") {
      using Coop = PlanOverrides::Coop;
      if (value != "off" && value != "native" && value != "emulated")
        return invalid_argument("kernel plan: matmul_coop is '" + std::string(value) +
                                "'; use off, native or emulated");
      out.matmul_coop = value == "off" ? Coop::kOff : value == "native" ? Coop::kNative : Coop::kEmulated;
      continue;
    }
    if (key == "lm_decode_grid") {
      // GPU decoding: invocations per workgroup x FFN and logit columns per workgroup, e.g. 256x16.
      const size_t x = value.find('x');
      uint32_t wg = 0, cols = 0;
      const bool parsed = x != std::string_view::npos &&
                          std::from_chars(value.data(), value.data() + x, wg).ec == std::errc() &&
                          std::from_chars(value.data() + x + 1, value.data() + value.size(), cols).ec == std::errc();
      if (!parsed || wg < 32 || wg > 1024 || (wg & (wg - 1)) != 0 || cols < 4 || cols > 256 || cols % 4 != 0)
        return invalid_argument("kernel plan: lm_decode_grid is '" + std::string(value) +
                                "'; use WORKGROUPxCOLUMNS, a power of two from 32 to 1024 and a multiple of 4 "
                                "from 4 to 256 (e.g. 256x16)");
      out.lm_decode_grid = std::pair<uint32_t, uint32_t>{wg, cols};
      continue;
    }
    if (key == "lm_decode_columns") {
      uint32_t n = 0;
      const bool parsed = std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc();
      if (!parsed || (n != 1 && n != 4 && n != 8 && n != 16))
        return invalid_argument("kernel plan: lm_decode_columns is '" + std::string(value) + "'; use 1, 4, 8 or 16");
      out.lm_decode_columns = n;
      continue;
    }
    if (key != "linear_attention")
      return invalid_argument(
          "kernel plan: unknown key '" + std::string(key) +
          "' (known: block_tile, icl_layers, icl_layers_per_dispatch, icl_tasks_per_workgroup, la_scan_groups, "
          "la_tile, linear_attention, "
          "lm_decode, lm_decode_columns, lm_decode_grid, matmul_coop, matmul_layout, matmul_splits, matmul_tile)");
    if (value == "scan")
      out.linear_attention = LinearAttentionAlgorithm::kRegisterScan;
    else if (value == "serial")
      out.linear_attention = LinearAttentionAlgorithm::kChunkedSerial;
    else if (value == "parallel")
      out.linear_attention = LinearAttentionAlgorithm::kChunkedParallel;
    else
      return invalid_argument("kernel plan: linear_attention is '" + std::string(value) +
                              "'; use scan, serial or parallel");
  }
  return out;
}

uint32_t reduction_workgroup(const DeviceTraits& d, uint64_t dim) {
  uint32_t wg = d.family == Family::kCpu ? d.subgroup : std::min(256u, d.max_invocations);
  // Each invocation passes over its share of the row up to three times.
  while (dim != 0 && wg < 256 && wg * 2 <= d.max_invocations && 3 * (dim + wg - 1) / wg > d.loop_budget) wg *= 2;
  return wg;
}

uint32_t row_vector_width(std::initializer_list<uint64_t> row_lengths) {
  for (uint64_t n : row_lengths)
    if (n % 4 != 0) return 1;
  return 4;
}

namespace {

// GPUs: the register kernels for rows up to 1024 elements (8 vectors of 4 per lane and array with
// 32-lane subgroups), where every subgroup has the planned lanes. The generic kernel's two passes
// over a short row are each a wait on memory (16384 x 256 f32 ran at 59% of copy forward, 36%
// backward on an H200, the backward's dgain reading x and dy a second time).
bool gpu_register_rows(const DeviceTraits& d, uint32_t dim) {
  return d.family == Family::kGpu && d.subgroup_arithmetic && d.fixed_subgroup && d.subgroup >= 4 &&
         d.subgroup <= d.max_invocations && dim <= 1024;
}

}  // namespace

RmsnormPlan rmsnorm_forward(const DeviceTraits& d, uint32_t dim) {
  RmsnormPlan p;
  p.vector_width = row_vector_width({dim});  // every kernel has a `_vec4` variant
  // Rows up to 4096 fit the register kernel's per-lane arrays; longer rows need more registers than pays.
  // The register kernel reduces with subgroupAdd; without it, the generic kernel's shared-memory tree.
  if (register_kernels_fit(d) && d.subgroup_arithmetic && dim <= 4096) {
    p.register_kernel = true;
    p.rows_per_group = 16;  // a subgroup keeps its share of the gain in registers over 16 rows
    p.workgroup = d.subgroup;
    return p;
  }
  if (gpu_register_rows(d, dim)) {
    // 256 invocations, each subgroup on 4 rows: many subgroups in flight, the gain read once per 4 rows.
    p.register_kernel = true;
    p.rows_per_group = 4;
    p.workgroup = d.subgroup;
    p.subgroups = std::max(1u, std::min(256u, d.max_invocations) / d.subgroup);
    return p;
  }
  p.workgroup = reduction_workgroup(d, dim);
  return p;
}

std::optional<RmsnormBackwardPlan> rmsnorm_backward(const DeviceTraits& d, uint32_t rows, uint32_t dim) {
  const RmsnormPlan forward = rmsnorm_forward(d, dim);
  if (!forward.register_kernel) return std::nullopt;  // the same register limits
  if (d.family == Family::kGpu) {
    // Up to 8 subgroups per block, 4 rows each, as the shared memory for their dgain sums allows:
    // 16384 rows make 512 blocks (512 KiB of partial sums at 256 columns).
    const uint64_t row_bytes = 4ull * round_up(dim, d.subgroup * forward.vector_width);
    uint32_t subgroups = forward.subgroups;
    while (subgroups > 1 && subgroups * row_bytes > d.shared_bytes) subgroups /= 2;
    const uint32_t per = 4 * subgroups;
    return RmsnormBackwardPlan{d.subgroup, per, uint32_t(ceil_div(std::max<uint32_t>(rows, 1), per)),
                               forward.vector_width, subgroups};
  }
  // Blocks of at least 16 rows (the gain is read once per block) and at most 256 blocks, so the
  // partial sums stay small (4 MiB at 4096 columns) and their sum short.
  uint64_t per = std::max<uint64_t>(16, ceil_div(rows, 256));
  per = std::min<uint64_t>(per, std::max<uint32_t>(rows, 1));
  if (per + 8 > d.loop_budget) return std::nullopt;
  return RmsnormBackwardPlan{d.subgroup, uint32_t(per), uint32_t(ceil_div(std::max<uint32_t>(rows, 1), per)),
                             forward.vector_width};
}

Result<RmsnormGainPlan> rmsnorm_backward_gain(const DeviceTraits& d, uint32_t rows) {
  // GPUs want many workgroups (blocks of 128 rows); a CPU driver wants a few long ones per core.
  uint64_t per = d.family == Family::kCpu ? 1024 : 128;
  per = std::max<uint64_t>(per, ceil_div(rows, 65535));  // blocks are the grid's y dimension
  if (d.loop_budget != UINT64_MAX) per = std::max<uint64_t>(per, ceil_div(rows, d.loop_budget));
  per = std::min<uint64_t>(per, std::max<uint32_t>(rows, 1));
  if (per > d.loop_budget)
    return out_of_range("rmsnorm_backward: dgain over " + std::to_string(rows) +
                        " rows needs blocks longer than the device's loop limit");
  return RmsnormGainPlan{uint32_t(per), uint32_t(ceil_div(std::max<uint32_t>(rows, 1), per))};
}

RmsnormGainSumPlan rmsnorm_gain_sum(const DeviceTraits& d, uint32_t blocks) {
  // CPU drivers: a column per invocation (lavapipe's threads take whole workgroups). GPUs: up to 32
  // slices of at least 8 blocks each, so a column's chain of memory waits is short.
  if (d.family == Family::kCpu) return {};
  uint32_t slices = 1;
  while (slices < 32 && slices * 2 * 8 <= blocks && slices * 2 <= std::min(256u, d.max_invocations)) slices *= 2;
  return {std::min(256u, d.max_invocations), slices};
}

MatmulPlan matmul(const DeviceTraits& d, const MatmulShape& s) {
  MatmulPlan p;
  // The register kernel loops K / SG times per invocation, the shared-memory one K / 16 times: under a
  // driver loop limit (lavapipe) a long K goes to the shared-memory kernel.
  const uint64_t sg = std::max(d.subgroup, 4u);
  const uint64_t register_loops = ceil_div(s.k, sg) + sg + 8, shared_loops = ceil_div(s.k, 16) * 24 + 8;
  p.register_kernel = register_kernels_fit(d) && register_loops <= d.loop_budget;
  p.inner_loops = p.register_kernel ? register_loops : shared_loops;
  if (p.register_kernel) {
    // One subgroup computes 64 rows x 64 columns (8 lanes x 8 columns each). On lavapipe, with the
    // kernel's k blocks, 64 x 64 ran 1024^3 at 43-45% of the FMA peak against 29-32% for the
    // earlier 64 x 32; 128 x 64 and 64 x 128 ran 50-58% but their unrolled blocks took 3x and 10x
    // as long to compile (35 s for one pipeline), so the tile stays at 64 x 64 (about 3 s).
    // Fewer rows than the tile (a decoding step's single row) would repeat the row's work, and
    // fewer columns would waste lanes: both shrink to fit.
    p.wg_x = uint32_t(sg);
    p.wg_y = 1;
    p.tm = 64;
    p.tn = uint32_t(std::max<uint64_t>(1, 64 / sg));
    // Only C narrower than a tile folds: wider ones fill their tiles anyway, and a folded grid
    // stays below the batch count in x (which the driver bounds like z).
    p.fold_batch = s.a_shared && s.batches > 1 && s.n < sg * p.tn;
    const uint64_t columns = p.fold_batch ? s.n * s.batches : s.n;
    while (p.tm > 1 && p.tm > s.m) p.tm /= 2;
    while (p.tn > 1 && sg * p.tn / 2 >= columns) p.tn /= 2;
  } else if (d.max_invocations < p.wg_x * p.wg_y) {
    // The same 64 x 64 block from 16 x 8 invocations of 8 x 4 accumulators: Vulkan guarantees only
    // 128 invocations per workgroup (the vulkan11-minimum profile).
    p.wg_y = 8;
    p.tm = 8;
  } else if (d.forced.matmul_tile) {
    p.tm = d.forced.matmul_tile->first;
    p.tn = d.forced.matmul_tile->second;
  } else {
    // 8 x 8 accumulators (a 128 x 128 block) load half as much shared memory per FMA as 4 x 4. On an
    // H200 (f32, rill bench --op matmul, each tile forced) they won where the product has hundreds of
    // big blocks and a long K: 4096^3 4.8 ms against 6.3, 65536 x 256 x 512 3.4 against 4.3; they
    // lost at K = 256 (65536 x 512 x 256: 1.65 against 0.79 ms) and with f16 storage (4096^3: 17.1
    // against 6.2 ms), where 4 x 4 stays.
    const uint64_t big_blocks = ceil_div(s.m, 128) * ceil_div(s.n, 128) * s.batches;
    if (!s.f16 && big_blocks >= 256 && s.k >= 512) p.tm = p.tn = 8;
  }
  // Strided accumulators unless forced: the grouped layout's vector shared loads are untimed on a
  // GPU (tools/gpu-check.sh matmul_sweep times it).
  p.grouped = !p.register_kernel && d.forced.matmul_grouped.value_or(false);
  // The shared tiles (16 deep, a column of padding each, 4 grouped) must fit: 8 x 8 needs 16.1 KiB,
  // over a 16 KiB device's limit, which keeps the 64 x 64 block.
  const uint64_t pad = p.grouped ? 4 : 1;
  auto tiles_bytes = [&] { return 4ull * 16 * (p.wg_y * p.tm + pad + p.wg_x * p.tn + pad); };
  if (!p.register_kernel && tiles_bytes() > d.shared_bytes) {
    p.tm = p.wg_y == 8 ? 8 : 4;
    p.tn = 4;
  }
  if (!p.register_kernel) {
    // Fewer than about 128 blocks leave most of a big GPU idle (256 x 1024 x 4096 on an H200: 64
    // blocks, 6 TFLOP/s against 17-29 for wide products): split K while the blocks stay within
    // about 512 and each share keeps 512 or more of K. The partial products (f32) stay within a
    // bound of their own (a forced count is taken as given).
    const uint64_t blocks = ceil_div(s.m, p.wg_y * p.tm) * ceil_div(s.n, p.wg_x * p.tn) * s.batches;
    if (d.forced.matmul_splits) {
      p.splits = *d.forced.matmul_splits;
    } else if (blocks < 128 && s.k >= 1024 && s.m >= 64) {  // a few rows (decoding) stay one dispatch
      while (p.splits < 16 && blocks * p.splits * 2 <= 512 && s.k / (p.splits * 2) >= 512 &&
             8 * p.splits * s.m * s.n * s.batches <= kSplitPartialBytes)
        p.splits *= 2;
    }
    p.inner_loops = ceil_div(ceil_div(s.k, p.splits), 16) * 24 + 8;
  }
  return p;
}

std::optional<CoopMatmulPlan> cooperative_matmul(const DeviceTraits& d, const MatmulShape& s) {
  using Coop = PlanOverrides::Coop;
  const Coop mode = d.forced.matmul_coop.value_or(d.cooperative_matrix_f16[0] != 0 ? Coop::kNative : Coop::kOff);
  if (mode == Coop::kOff || !s.f16 || !s.rows_vectorizable) return std::nullopt;
  CoopMatmulPlan p;
  p.emulated = mode == Coop::kEmulated;
  p.subgroup = d.subgroup;
  if (p.emulated) {
    // 16 x 16 x 16 fragments, 2 x 2 subgroups of 2 x 2 fragments: a 64 x 64 block that crosses
    // every offset the native kernel uses.
    p.frags_m = p.frags_n = 2;
  } else {
    if (d.cooperative_matrix_f16[0] != 0) {
      p.fm = d.cooperative_matrix_f16[0];
      p.fn = d.cooperative_matrix_f16[1];
      p.fk = d.cooperative_matrix_f16[2];
    }
    // 128 x 128 blocks (4 subgroups of 64 x 64) where the product has hundreds of them, as the
    // shared-memory kernel's 8 x 8 tiles; else 64 x 64, so small products still spread.
    const bool big = ceil_div(s.m, 128) * ceil_div(s.n, 128) * s.batches >= 256;
    p.frags_m = (big ? 64 : 32) / p.fm;
    p.frags_n = (big ? 64 : 32) / p.fn;
  }
  // Loops per invocation for a loop-limited driver: per k slice the fetch and store loops and, when
  // emulated, each fragment product's rows (its k steps unrolled only in the native form).
  const uint64_t slices = ceil_div(s.k, 32), frags = uint64_t(p.frags_m) * p.frags_n;
  const uint64_t per_lane = uint64_t(p.fm) * p.fn / std::max(p.subgroup, 1u);
  const uint64_t products = p.emulated ? frags * (32 / p.fk) * per_lane * (p.fk + 1) : 0;
  p.inner_loops = slices * (products + 8) + frags * (per_lane + 2) + 8;
  return p;
}

std::optional<PackedMatvecPlan> packed_matvec(const DeviceTraits& d, uint64_t m, uint64_t k, uint32_t group) {
  // A few rows read each weight once either way; the tiled kernels' 4-column strides between lanes
  // and per-element scales cost 10-20x on lavapipe (385M int8 decode: 3.1 s per token).
  if (m == 0 || m > 4) return std::nullopt;
  PackedMatvecPlan p;
  // A CPU driver runs a workgroup's invocations as SIMD lanes: one subgroup's worth of columns.
  p.workgroup = d.family == Family::kCpu ? std::max(d.subgroup, 1u) : std::min(64u, d.max_invocations);
  p.rows = uint32_t(m);
  p.words = d.family == Family::kCpu ? 4 : 1;
  p.inner_loops = k + ceil_div(k, std::max(group, 1u)) + 8;
  return p;
}

namespace {

// The tile width of the GPU block-attention kernels: shared memory holds the block's scores, a
// TILE-wide slice of the block's rows and a TILE x 128 tile (heads up to 128), plus `extra` floats.
// 0 where even tiles of 4 do not fit.
uint32_t block_attention_tile(const DeviceTraits& d, uint32_t block, uint64_t extra) {
  // Score and row-tile rows are padded by a word (block_attention_tiles.glsl says why).
  auto shared_bytes = [&](uint64_t tile) {
    return 4 * (uint64_t(block) * (block + 1) + block * (tile + 1) + tile * 128 + extra);
  };
  // A forced depth is kept or refused (0: the op says so), never silently changed.
  if (d.forced.block_tile) return shared_bytes(*d.forced.block_tile) <= d.shared_bytes ? *d.forced.block_tile : 0;
  uint32_t tile = 16;
  while (tile > 4 && shared_bytes(tile) > d.shared_bytes) tile /= 2;
  return shared_bytes(tile) <= d.shared_bytes ? tile : 0;
}

}  // namespace

BlockAttentionPlan block_attention_forward(const DeviceTraits& d, uint32_t block) {
  BlockAttentionPlan p;
  if (d.family == Family::kGpu && block <= 64) {
    // Shared memory also holds the softmax's partial row maxima and sums, one per invocation.
    p.tile = block_attention_tile(d, block, std::min(256u, d.max_invocations));
    p.tiled = p.tile > 0;
    p.workgroup = p.tiled ? std::min(256u, d.max_invocations) : 0;
    return p;
  }
  if (!register_kernels_fit(d)) return p;
  p.register_kernel = true;
  p.subgroup = d.subgroup;
  // Several rows per lane share each key and value load: 4 measured best of 1, 2, 4 on lavapipe
  // (block 64, D 64: 18%, 24%, 38% of the FMA peak non-causal).
  p.rows_per_lane = block > 2 * d.subgroup ? 4 : block > d.subgroup ? 2 : 1;
  return p;
}

BlockAttentionBackwardPlan block_attention_backward(const DeviceTraits& d, uint32_t block, uint32_t dk, uint32_t dv) {
  BlockAttentionBackwardPlan p;
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
    return p;
  }
  if (d.family != Family::kGpu || block > 64) return p;
  p.tile = block_attention_tile(d, block, block);  // shared memory also holds the rows' deltas
  p.tiled = p.tile > 0;
  p.workgroup = p.tiled ? std::min(256u, d.max_invocations) : 0;
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
  return SerialChunks{s.chunk, uint32_t(std::max<uint64_t>(per, 1))};
}

namespace {

// CPU drivers: a scan with the state columns in registers (la_scan_cpu.glsl says why); it needs
// subgroup shuffles and Dk <= 128 (registers). `fit` sizes the registers (the backward's square
// shape), `s` has the real widths.
LinearAttentionPlan register_scan_plan(const DeviceTraits& d, const LinearAttentionShape& s,
                                       const LinearAttentionShape& fit) {
  LinearAttentionPlan p;
  p.algorithm = LinearAttentionAlgorithm::kRegisterScan;
  p.chunk = s.chunk;
  p.columns_per_lane = fit.dk <= 64 ? 4 : 2;
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
  // Shared memory of the output pass (scores, powers, A tile with padded rows, the other tile) and
  // the states pass.
  auto shared_bytes = [&](uint64_t c, uint64_t tile) {
    return 4 * std::max(c * (c + 1) + c + 1 + c * (tile + 1) + tile * kMaxHeadDim, c + 2 * tile * kMaxHeadDim);
  };
  // Narrower tiles first, then shorter chunks (the same result, more chunks to scan): 64-row
  // chunks' scores alone fill a Mali-class GPU's 16 KiB.
  uint64_t c = s.chunk;
  uint32_t tile = d.forced.la_tile.value_or(16);
  if (d.forced.la_tile && shared_bytes(c, tile) > d.shared_bytes) return std::nullopt;
  while (shared_bytes(c, tile) > d.shared_bytes) {
    if (tile > 4) {
      tile /= 2;
    } else if (c > 8) {
      c = (c + 1) / 2;
      tile = 16;
    } else {
      return std::nullopt;
    }
  }
  const uint32_t wg = std::min(256u, d.max_invocations);
  // Loop iterations of one invocation of the output pass (the longest): scores, then f(A) P_c and
  // the scores times h(C), per round of 4 x 4 blocks.
  const uint64_t k_steps = ceil_div(s.dk, tile), s_steps = ceil_div(c, tile);
  const uint64_t score_rounds = ceil_div(ceil_div(c, 4) * ceil_div(c, 4), wg);
  const uint64_t out_rounds = ceil_div(ceil_div(c, 4) * ceil_div(s.dv, 4), wg);
  const uint64_t output_loops = score_rounds * k_steps * (2 * ceil_div(c * tile, wg) + tile) +
                                out_rounds * (k_steps * (ceil_div(c * tile, wg) + ceil_div(tile * s.dv, wg) + tile) +
                                              s_steps * (ceil_div(tile * s.dv, wg) + tile)) +
                                8;
  if (output_loops > d.loop_budget) return std::nullopt;
  const uint64_t state_bytes = 4ull * s.dk * s.dv * s.heads;
  uint64_t window = std::min<uint64_t>(ceil_div(s.n, c), kParallelScratchBytes / state_bytes);
  window = std::min<uint64_t>(window, d.max_storage_range / state_bytes);
  window = std::min<uint64_t>(window, d.loop_budget / 4);
  window = std::min<uint64_t>(window, 65535);
  if (s.chunks_per_dispatch != 0) window = std::min<uint64_t>(window, s.chunks_per_dispatch);
  if (window < 1) return std::nullopt;
  LinearAttentionPlan p;
  p.algorithm = LinearAttentionAlgorithm::kChunkedParallel;
  p.chunk = uint32_t(c);
  p.chunks_per_dispatch = uint32_t(window);
  p.workgroup = wg;
  p.tile = tile;
  // The state scan (la_par_scan.comp): on a GPU a serial walk over the window's chunks is a chain of
  // memory latencies; cut into about sqrt(window) runs it is 2 window / runs + runs steps long, for
  // twice the traffic. At least 8 elements per workgroup, so that each run's loads fill 32-byte
  // sectors. A CPU driver has no latency to hide: lavapipe (the parallel form forced) ran the scan
  // 3-4.5x slower in runs (0.66 -> 2.9 ms at N 1K, 8.6 -> 28 ms at 16K), so it walks.
  p.scan_groups = 1;
  while (d.family == Family::kGpu && p.scan_groups < 32 && p.scan_groups * 2 * 8 <= wg &&
         4ull * p.scan_groups * p.scan_groups <= window)
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
    if (forced || d.forced.la_tile)
      return invalid_argument(std::string(op) + ": the forced parallel chunked form" +
                              (d.forced.la_tile ? " with tiles of " + std::to_string(*d.forced.la_tile) : "") +
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
  const bool scan_fits = d.subgroup >= 4 && d.subgroup <= d.max_invocations && fit.dk <= 128;
  if (forced == Algorithm::kRegisterScan) {
    if (!scan_fits)
      return invalid_argument(std::string(op) +
                              ": the forced register scan needs subgroups of 4 or more lanes and Dk <= 128");
    return register_scan_plan(d, s, fit);
  }
  if (!forced && d.family == Family::kCpu && scan_fits) return register_scan_plan(d, s, fit);
  return chunked_plan(d, s, fit, op);
}

}  // namespace

Result<LinearAttentionPlan> linear_attention_forward(const DeviceTraits& d, const LinearAttentionShape& s) {
  return scan_or_chunked(d, s, s, "linear_attention");
}

Result<LinearAttentionPlan> linear_attention_noncausal(const DeviceTraits& d, const LinearAttentionShape& s) {
  return scan_or_chunked(d, s, s, "linear_attention");
}

Result<LinearAttentionPlan> linear_attention_backward(const DeviceTraits& d, const LinearAttentionShape& s) {
  // The gradients exchange Dk and Dv: every pass must fit the wider of the two in both places.
  LinearAttentionShape square = s;
  square.dk = square.dv = std::max(s.dk, s.dv);
  return scan_or_chunked(d, s, square, "linear_attention_backward");
}

namespace {

// The fused decoding kernels' sizes, or why they do not fit.
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
  const auto [gpu_workgroup, gpu_columns] = d.forced.lm_decode_grid.value_or(std::pair<uint32_t, uint32_t>{256, 16});
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
  p.in_max = std::max({s.width, p.ffn_slice, 4 * s.head_dim});
  p.out_max = std::max({s.width, 4 * s.head_dim, 2 * p.ffn_slice, p.logit_columns});
  // Groups of 4 adjacent columns per invocation, a load each per row, where every matrix's columns
  // (and a head, so that an invocation's columns stay in one matrix) divide into them. CPU drivers:
  // loads cost a loop over the lanes there; int8 weights take 16 (four words per row: 385M decode
  // on lavapipe 210 -> 150 ms per token), f32 and f16 ones 4 (16 measured 1.1x and 2x slower).
  // GPUs: 4, so that a product's few columns leave 4x as many invocations to split its rows (a
  // token's time is the serial walk of each invocation over its rows).
  auto divides = [&](uint32_t c) {  // adjacent columns per invocation
    return s.head_dim % c == 0 && s.width % c == 0 && s.ffn % c == 0 && s.vocab % c == 0 && p.ffn_slice % c == 0 &&
           p.logit_columns % c == 0;
  };
  if (const std::optional<uint32_t> forced = d.forced.lm_decode_columns) {
    if (!divides(*forced))
      return per_op("the forced " + std::to_string(*forced) + " columns per invocation do not divide the widths");
    p.lane_groups = *forced / 4;
  } else {
    for (uint32_t g = d.family == Family::kCpu && s.int8_group > 0 ? 4 : 1; g >= 1 && p.lane_groups == 0; g /= 2)
      if (divides(4 * g)) p.lane_groups = g;
  }
  // mv_in, mv_out, mv_split (a group's columns per invocation), the reduction's partials, the
  // softmax weights, the mixer's partial sums, o and the softmax sums.
  auto shared_bytes = [&] {
    return 4ull * (p.in_max + p.out_max + (3ull + std::max(4 * p.lane_groups, 1u)) * p.workgroup + 2ull * s.head_dim);
  };
  if (shared_bytes() > d.shared_bytes && !d.forced.lm_decode_columns) p.lane_groups = 0;  // a phone's 16 KiB
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
  p.fused = true;
  return p;
}

}  // namespace

Result<LmDecodePlan> lm_decode(const DeviceTraits& d, const LmDecodeShape& s) {
  LmDecodePlan p = fused_decode_plan(d, s);
  // Forcing a fused kernel's parameter forces the fused kernels too: refused by name, never ignored.
  if ((d.forced.lm_decode_fused == true || d.forced.lm_decode_columns) && !p.fused && d.forced.lm_decode_fused != false)
    return invalid_argument("lm decode: the forced fused kernels do not fit: " + p.per_op_reason);
  if (d.forced.lm_decode_fused == false) {
    p.fused = false;
    p.per_op_reason = "forced";
  }
  return p;
}

uint32_t lm_prefill_segment(const DeviceTraits& d) {
  // H200, default model (rill bench --op lm --lm-segment): 2048 positions ran 0.78-0.92 M tokens/s
  // at 64K-1M tokens in 55 MiB, 8192 ran 1.21-1.30 M in 172 MiB. CPU drivers gain nothing from
  // longer segments.
  return d.family == Family::kGpu ? 8192 : 2048;
}

bool icl_sample_per_token(const DeviceTraits& d, uint32_t tokens) {
  return d.family == Family::kGpu && tokens <= 65535;
}

Result<IclLayersPlan> icl_layers(const DeviceTraits& d, const IclLayersShape& s) {
  IclLayersPlan p;
  const uint64_t mat = uint64_t(s.width) * s.width, token_elems = uint64_t(s.tokens) * s.width;
  // The backward's shared arrays per task (the forward's are fewer): tokens, gradient and input
  // gradient, five matrices, the layer's parameter gradients, two rows; and the staged parameters.
  auto shared_bytes = [&](uint64_t tasks) {
    return (tasks * (3 * token_elems + 5 * mat + s.layer_params + 2 * s.width) + s.layer_params) * 4;
  };
  // Invocations per task: one per matrix entry up to 128 for a workgroup of one task. Several tasks
  // share a workgroup of up to 256 invocations, at least a subgroup each, so each workgroup's
  // loads and stores of the task-minor arrays cover whole runs of neighbouring tasks.
  const uint32_t lanes_min = std::min(std::max<uint32_t>(d.subgroup, 32), d.max_invocations);
  auto lanes_for = [&](uint32_t tasks) {
    uint32_t lanes = lanes_min;
    while (lanes < 128 && lanes < mat && uint64_t(lanes) * 2 * tasks <= std::min(256u, d.max_invocations)) lanes *= 2;
    return lanes;
  };
  uint32_t tasks = 1;
  if (const auto forced = d.forced.icl_tasks_per_workgroup) {
    tasks = *forced;
    if (uint64_t(tasks) * lanes_min > d.max_invocations || shared_bytes(tasks) > d.shared_bytes)
      return invalid_argument("icl: " + std::to_string(tasks) +
                              " tasks per workgroup do not fit the device's workgroup or shared memory");
  } else {
    while (tasks < 64 && uint64_t(tasks) * 2 * lanes_min <= std::min(256u, d.max_invocations) &&
           shared_bytes(tasks * 2) <= d.shared_bytes)
      tasks *= 2;
  }
  p.tasks_per_workgroup = tasks;
  p.workgroup = lanes_for(tasks);
  const bool fits = shared_bytes(tasks) <= d.shared_bytes;
  if (d.forced.icl_workgroup_per_task == true && !fits)
    return invalid_argument("icl: the forced workgroup layer kernels need " + std::to_string(shared_bytes(tasks)) +
                            " bytes of shared memory; the device has " + std::to_string(d.shared_bytes));
  if (d.forced.icl_workgroup_per_task) {
    p.workgroup_per_task = *d.forced.icl_workgroup_per_task;
    p.reason = "forced";
  } else if (d.family == Family::kCpu) {
    p.reason = "CPU driver: a task per SIMD lane";
  } else if (!fits) {
    p.reason = "a task's matrices exceed the shared memory";
  } else if (s.tasks >= 32768) {
    // Enough tasks fill a GPU with one per invocation, whose loads of the element-major batch are
    // coalesced. H200, Vladymyrov setting: 21 models (43008 tasks) ran 3.37 ms per step a task per
    // invocation against 3.96 a workgroup per task; one model (2048 tasks) 0.91 against 0.17 ms.
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
  else if (d.family == Family::kCpu)
    per = 1;
  p.layers_per_dispatch = uint32_t(per);
  return p;
}

Status check_loop_budget(const DeviceTraits& d, const DeviceInfo& device, uint64_t iterations, const char* op,
                         const char* what) {
  if (iterations <= d.loop_budget) return Status::ok();
  return out_of_range(std::string(op) + ": " + what + " needs about " + std::to_string(iterations) +
                      " loop iterations per invocation; " + device.name + " stops loops after " +
                      std::to_string(vk::quirk_flags_for(device).max_loop_iterations));
}

std::vector<PlanSummary> summarize(const DeviceTraits& d) {
  std::vector<PlanSummary> out;
  auto slices = [](uint32_t n) { return n > 1 ? ", summed in " + std::to_string(n) + " slices" : std::string(); };
  for (const auto& [rows, dim] : {std::pair<uint32_t, uint32_t>{4096, 4096}, {16384, 256}}) {
    const std::string shape = std::to_string(rows) + " x " + std::to_string(dim);
    const RmsnormPlan r = rmsnorm_forward(d, dim);
    out.push_back({"rmsnorm_forward", shape,
                   r.register_kernel
                       ? "register kernel, " + std::to_string(r.rows_per_group) + " rows per subgroup of " +
                             std::to_string(r.workgroup) +
                             (r.subgroups > 1 ? ", " + std::to_string(r.subgroups) + " per workgroup" : "")
                       : "generic kernel, " + std::to_string(r.workgroup) + " invocations per row"});
    const auto rb = rmsnorm_backward(d, rows, dim);
    out.push_back({"rmsnorm_backward", shape,
                   rb ? "one pass per block of " + std::to_string(rb->rows_per_block) + " rows (" +
                            std::to_string(rb->blocks) + " blocks of dgain sums" +
                            slices(rmsnorm_gain_sum(d, rb->blocks).slices) + ")"
                      : "a workgroup per row for dx, then dgain's two-level column sum"});
  }
  out.push_back({"reduction rows", "any", std::to_string(reduction_workgroup(d)) + " invocations per row"});
  for (const auto& [rows, inner] : {std::pair<uint64_t, uint64_t>{1, 1024}, {1024, 1024}, {256, 4096}}) {
    const MatmulPlan m = matmul(d, {.m = rows, .n = 1024, .k = inner});
    out.push_back({"matmul", std::to_string(rows) + " x 1024 x " + std::to_string(inner),
                   std::string(m.variant()) + " variant, workgroup " + std::to_string(m.wg_x) + " x " +
                       std::to_string(m.wg_y) + ", tile " + std::to_string(m.wg_y * m.tm) + " x " +
                       std::to_string(m.wg_x * m.tn) +
                       (m.splits > 1 ? ", K in " + std::to_string(m.splits) + " shares" : "") +
                       (m.grouped ? ", grouped accumulators" : "")});
  }
  const MatmulShape f16_square{.m = 4096, .n = 4096, .k = 4096, .f16 = true, .rows_vectorizable = true};
  if (const auto coop = cooperative_matmul(d, f16_square))
    out.push_back({"matmul f16", "4096 x 4096 x 4096",
                   std::string(coop->emulated ? "cooperative matrices emulated" : "cooperative matrices") + ", " +
                       std::to_string(coop->fm) + " x " + std::to_string(coop->fn) + " x " + std::to_string(coop->fk) +
                       " fragments, block " + std::to_string(coop->block_m()) + " x " +
                       std::to_string(coop->block_n()) + ", workgroup " + std::to_string(coop->workgroup())});
  const BlockAttentionPlan b = block_attention_forward(d, 64);
  out.push_back({"block_attention_forward", "block 64",
                 b.register_kernel ? "register kernel, " + std::to_string(b.rows_per_lane) + " query rows per lane"
                 : b.tiled ? "tiled kernel, one workgroup of " + std::to_string(b.workgroup) + " per block, tiles of " +
                                 std::to_string(b.tile)
                           : "generic kernel, one invocation per query row"});
  const BlockAttentionBackwardPlan bb = block_attention_backward(d, 64, 64, 64);
  out.push_back({"block_attention_backward", "block 64, D 64",
                 bb.register_kernel ? "register kernel, query then key row groups, " +
                                          std::to_string(bb.rows_per_lane) + " rows per lane"
                 : bb.tiled ? "tiled kernel, one workgroup of " + std::to_string(bb.workgroup) +
                                  " per block for every gradient, tiles of " + std::to_string(bb.tile)
                            : "generic kernels, one invocation per query row, then per key row"});
  auto describe = [](const Result<LinearAttentionPlan>& la) {
    if (!la.is_ok()) return la.status().message();
    std::string text(algorithm_name(la.value().algorithm));
    if (la.value().algorithm != LinearAttentionAlgorithm::kRegisterScan)
      text += ", " + std::to_string(la.value().chunks_per_dispatch) + " chunks per window";
    return text;
  };
  for (const auto& [heads, dim] : {std::pair<uint64_t, uint32_t>{4, 64}, {8, 32}}) {
    const LinearAttentionShape s{.heads = heads, .n = 65536, .dk = dim, .dv = dim, .chunk = 64};
    const std::string shape = "BH " + std::to_string(heads) + ", N 65536, D " + std::to_string(dim);
    out.push_back({"linear_attention_forward (causal)", shape, describe(linear_attention_forward(d, s))});
    if (dim == 64) {
      out.push_back({"linear_attention_forward (non-causal)", shape, describe(linear_attention_noncausal(d, s))});
      out.push_back({"linear_attention_backward", shape, describe(linear_attention_backward(d, s))});
    }
  }
  // Vladymyrov et al.'s FULL model: 3 layers of 242 parameters, about 14,800 loop iterations per layer.
  if (auto icl =
          icl_layers(d, {.width = 11, .tokens = 21, .layers = 3, .layer_params = 242, .layer_iterations = 14800});
      icl.is_ok()) {
    const std::string layers = ", " + std::to_string(icl->layers_per_dispatch) + " of 3 layers per dispatch";
    out.push_back({"icl layers", "d 10, n 20, L 3 (Vladymyrov et al.)",
                   icl->workgroup_per_task ? "workgroups of " + std::to_string(icl->tasks_per_workgroup) + " x " +
                                                 std::to_string(icl->workgroup) + " (tasks x invocations)" + layers +
                                                 " (" + icl->reason + ")"
                                           : "a task per invocation" + layers + " (" + icl->reason + ")"});
  }
  const LmDecodeShape lm;
  const LmDecodePlan decode = fused_decode_plan(d, lm);
  out.push_back({"lm decode", "width 256, 8 heads, FFN 512, vocab 256",
                 decode.fused ? "fused: 2 dispatches per layer, workgroups of " + std::to_string(decode.workgroup) +
                                    ", FFN slices of " + std::to_string(decode.ffn_slice) + ", " +
                                    std::to_string(decode.logit_columns) + " logits per workgroup"
                              : "per-op: " + decode.per_op_reason});
  return out;
}

}  // namespace rill::ops::plan

namespace rill {

std::vector<KernelPlanLine> describe_kernel_plans(const DeviceInfo& device, std::string_view family) {
  const ops::plan::DeviceTraits traits = ops::plan::traits_of(device, family);
  std::vector<KernelPlanLine> out;
  out.push_back({"kernel family", "", std::string(ops::plan::family_name(traits.family))});
  for (auto& s : ops::plan::summarize(traits)) out.push_back({std::move(s.op), std::move(s.shape), std::move(s.plan)});
  return out;
}

}  // namespace rill
