// Kernel plans of the products: the matmul kernels, cooperative matrices and packed matrix-vector
// products (kernel_plan.hpp).
#include <algorithm>
#include <tuple>

#include "kernel_plan.hpp"
#include "kernel_plan_util.hpp"

namespace rill::ops::plan {
namespace {

// Scratch a matmul split along K may hold for its partial products.
constexpr uint64_t kSplitPartialBytes = 64ull << 20;

// Whether the register kernel's texel form can read a packed B with `tn` columns per lane and
// subgroups of `sg` (true for a dense B): the words as texels of 4 (the device backs them), every
// row in whole texels, a lane's columns whole words that are one of a texel's words (int4), half a
// texel or whole texels, and int8's and int4's scales, texels of 4 columns, the same over each
// block of 4 sg k steps.
bool packed_texels_fit(const DeviceTraits& d, const MatmulShape& s, uint64_t tn, uint64_t sg) {
  if (s.packed_per_word == 0) return true;
  const uint64_t words_per_lane = tn / s.packed_per_word;
  const bool scaled = s.packed_per_word != gpu::kPackedF16PerWord;
  const bool lane_words =
      tn % s.packed_per_word == 0 && (words_per_lane == 2 || (words_per_lane > 0 && words_per_lane % 4 == 0) ||
                                      (words_per_lane == 1 && s.packed_per_word == gpu::kPackedInt4PerWord));
  return d.texel_u32x4 && s.n % (4 * s.packed_per_word) == 0 && lane_words &&
         (!scaled || (d.texel_f32x4 && (s.packed_group % (4 * sg) == 0 || s.packed_group >= s.k)));
}

}  // namespace

MatmulPlan matmul(const DeviceTraits& device, const MatmulShape& s) {
  // Tuned choices (the accumulator layout) fit every shape: the checks below apply to them too.
  const std::optional<DeviceTraits> tuned = tuned_traits(device);
  const DeviceTraits& d = tuned ? *tuned : device;
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
    // Rows as texels where the device backs 4-element texels of the storage type and every view
    // fits: each lane reads 4 adjacent elements at once (lavapipe gathers them; a storage-buffer
    // load loops over the lanes per element).
    const uint64_t most_elements = std::max(s.m * s.k, s.k * s.n) * s.batches;
    p.texel_rows = d.forced.matmul_texel.value_or(true) && s.rows_vectorizable && s.k % (4 * sg) == 0 &&
                   p.tn % 4 == 0 && s.n % p.tn == 0 &&
                   texel_views_fit(d, s.f16, most_elements / 4,
                                   s.packed_per_word != 0 && s.packed_per_word != gpu::kPackedF16PerWord ? 3 : 2) &&
                   packed_texels_fit(d, s, p.tn, sg);
    // The texel form walks K in blocks of 4 SG, four texel steps each: with that inner loop kept
    // rolled, 5 loop iterations per block (1.25 K / SG, against the plain form's K / SG).
    const uint64_t texel_loops = ceil_div(s.k, 4 * sg) * 5 + sg + 8;
    if (p.texel_rows && texel_loops > d.loop_budget) p.texel_rows = false;
    if (p.texel_rows) p.inner_loops = texel_loops;
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
  // Grouped accumulators on GPUs: their 16-byte shared loads ran every f32 product of issue 12's
  // goals faster on an H200 than the strided layout's one word per load (rill bench --op matmul
  // --matmul-shapes, forced: bench-h200/run8-26fd260/matmul_layout_grouped.json against run7's
  // matmul.json: 1024^3 0.089 ms against 0.103, 4096^3 4.01 against 4.48, 65536 x 512 x 256 0.62
  // against 0.72, 65536 x 256 x 512 0.56 against 0.60). The tiles hold f32 whatever the storage,
  // so f16 and packed weights take it too (untimed). CPU drivers keep strided (untimed there).
  p.grouped = !p.register_kernel && d.forced.matmul_grouped.value_or(d.family == Family::kGpu);
  // Slices 16 k steps deep unless forced: each slice is a wait on memory, but 32 (strided, run8's
  // matmul_depth_32.json) won at 4096^3 (4.32 ms against 4.48) and lost at 65536 x 512 x 256 (0.75
  // against 0.72); untimed with the grouped layout.
  if (!p.register_kernel) p.depth = d.forced.matmul_depth.value_or(16);
  // The shared tiles (a column of padding each, 4 grouped) must fit: 8 x 8 at 16 deep needs 16.1
  // KiB, over a 16 KiB device's limit, which keeps the 64 x 64 block; deeper slices go first.
  const uint64_t pad = p.grouped ? 4 : 1;
  auto tiles_bytes = [&] { return 4ull * p.depth * (p.wg_y * p.tm + pad + p.wg_x * p.tn + pad); };
  if (!p.register_kernel && tiles_bytes() > d.shared_bytes) p.depth = std::min(p.depth, 16u);
  if (!p.register_kernel && tiles_bytes() > d.shared_bytes) {
    p.tm = p.wg_y == 8 ? 8 : 4;
    p.tn = 4;
  }
  // Two stages of the tiles only where forced (untimed on a GPU) and where they fit.
  if (!p.register_kernel && d.forced.matmul_buffers == 2u && 2 * tiles_bytes() <= d.shared_bytes) p.stages = 2;
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
    p.inner_loops = ceil_div(ceil_div(s.k, p.splits), p.depth) * (p.depth + 8) + 8;
  }
  return p;
}

std::optional<CoopMatmulPlan> cooperative_matmul(const DeviceTraits& d, const MatmulShape& s) {
  using Coop = PlanOverrides::Coop;
  // A tuned choice of the native fragments counts only where the device has them.
  std::optional<Coop> chosen = d.forced.matmul_coop;
  if (!chosen && d.tuned && d.tuned->matmul_coop != Coop::kEmulated &&
      (d.tuned->matmul_coop != Coop::kNative || d.cooperative_matrix_f16[0] != 0))
    chosen = d.tuned->matmul_coop;
  const Coop mode = chosen.value_or(d.cooperative_matrix_f16[0] != 0 ? Coop::kNative : Coop::kOff);
  if (mode == Coop::kOff || !s.f16 || !s.rows_vectorizable || s.packed_per_word != 0) return std::nullopt;
  // The native kernel's subgroups own its fragments by gl_SubgroupID, in a workgroup of exactly its
  // subgroups: a driver that may run other sizes than it reports (no fixed size) would leave some
  // fragments unowned or index past its stage. The emulated form's groups are ranges of invocations.
  if (mode == Coop::kNative && !d.fixed_subgroup) return std::nullopt;
  CoopMatmulPlan p;
  p.emulated = mode == Coop::kEmulated;
  p.subgroup = d.subgroup;
  // Subgroups along m and n: 2 x 2 unless forced (2 x 4 and 4 x 2 keep the block with twice the
  // subgroups, each owning half the fragments: untimed on a GPU, tools/gpu-check.sh coop times them).
  std::tie(p.groups_m, p.groups_n) = d.forced.matmul_coop_groups.value_or(std::pair<uint32_t, uint32_t>{2, 2});
  auto set_block = [&](uint32_t block) {
    p.frags_m = std::max(1u, block / (p.groups_m * p.fm));
    p.frags_n = std::max(1u, block / (p.groups_n * p.fn));
  };
  if (p.emulated) {
    // 16 x 16 x 16 fragments, a 64 x 64 block (2 x 2 subgroups of 2 x 2 fragments) that crosses
    // every offset the native kernel uses.
    set_block(64);
  } else {
    if (d.cooperative_matrix_f16[0] != 0) {
      p.fm = d.cooperative_matrix_f16[0];
      p.fn = d.cooperative_matrix_f16[1];
      p.fk = d.cooperative_matrix_f16[2];
    }
    // 128 x 128 blocks (4 subgroups of 64 x 64) where the product has hundreds of them, as the
    // shared-memory kernel's 8 x 8 tiles; else 64 x 64, so small products still spread.
    const bool big = ceil_div(s.m, 128) * ceil_div(s.n, 128) * s.batches >= 256;
    set_block(big ? 128 : 64);
  }
  if (p.workgroup() > d.max_invocations) return std::nullopt;
  // One shared stage per k slice unless forced: two (one barrier per slice instead of two) take the
  // 128 x 128 block to 41 KiB, likely too much for two blocks to share an SM. H200, f16, the goals'
  // products (bench-h200/run8-26fd260/matmul_coop_buffers_1.json against run7's matmul.json): one
  // stage ran 4096^3 in 0.86 ms against 1.11, 65536 x 512 x 256 in 0.21 against 0.30, 65536 x 256 x
  // 512 in 0.16 against 0.22. Forced two stages give way to one where they do not fit; then 2 x 2
  // subgroups (eight add 4 KiB of epilogue stage); then the 64 x 64 block; then the other kernels.
  p.buffers = d.forced.matmul_coop_buffers.value_or(1);
  // Slices of 32 k steps unless forced: 64 (untimed on a GPU; tools/gpu-check.sh coop times it)
  // halve the barriers and waits per k but double the stages and the registers of the next slice.
  // A forced depth gives way first where the kernel does not fit.
  p.depth = d.forced.matmul_coop_depth.value_or(gpu::kCoopSliceDepth);
  const uint32_t block = p.block_m();
  if (p.shared_bytes() > d.shared_bytes) p.depth = gpu::kCoopSliceDepth;
  if (p.shared_bytes() > d.shared_bytes) p.buffers = 1;
  if (p.shared_bytes() > d.shared_bytes && p.groups_m * p.groups_n > 4) {
    p.groups_m = p.groups_n = 2;
    set_block(block);
  }
  if (p.shared_bytes() > d.shared_bytes && !p.emulated) set_block(64);
  if (p.shared_bytes() > d.shared_bytes) return std::nullopt;
  // Loops per invocation for a loop-limited driver: per k slice the fetch and store loops and, when
  // emulated, each fragment product's rows (its k steps unrolled only in the native form).
  const uint64_t slices = ceil_div(s.k, p.depth), frags = uint64_t(p.frags_m) * p.frags_n;
  const uint64_t per_lane = uint64_t(p.fm) * p.fn / std::max(p.subgroup, 1u);
  const uint64_t products = p.emulated ? frags * (p.depth / p.fk) * per_lane * (p.fk + 1) : 0;
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
  p.inner_loops = k + (group > 0 ? ceil_div(k, group) : 0) + 8;
  // Past a driver's loop limit the tiled kernels take it (their K loops are shorter).
  if (p.inner_loops > d.loop_budget) return std::nullopt;
  return p;
}

}  // namespace rill::ops::plan
