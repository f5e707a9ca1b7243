// Kernel plans: every decision about how an op's kernels run on a device, in one place.
//
// A plan turns (device traits, shape, optional forced family) into what the op dispatches: which
// kernel family and algorithm, workgroup and tile sizes, rows or chunks per workgroup and per
// dispatch. Ops ask for a plan and dispatch what it says; they never test the device themselves.
// Plans are plain values computed from `DeviceTraits`, so tests can plan for devices rill is not
// running on (a phone-class GPU, a datacenter GPU) and `rill info` can show what each op gets.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/context.hpp"
#include "rill/device.hpp"
#include "vk/kernel_contracts.hpp"
#include "rill/sequence.hpp"

namespace rill::ops::plan {

// The kernel families: register kernels without barriers for CPU drivers (lavapipe), shared-memory
// and many-workgroup kernels for GPUs.
enum class Family { kCpu, kGpu };
std::string_view family_name(Family f);

// Causal linear attention's algorithms (linear_attention_forward below).
enum class LinearAttentionAlgorithm {
  kRegisterScan,     // la_scan_cpu: one position after another, the state in registers (CPU drivers)
  kChunkedSerial,    // la_chunked: one workgroup per head walks its chunks in order
  kChunkedParallel,  // la_par_*: chunk states, a scan over them, then every chunk at once (GPUs)
};
std::string_view algorithm_name(LinearAttentionAlgorithm a);

// Choices forced by ContextOptions::kernel_plan / RILL_KERNEL_PLAN ("linear_attention=serial",
// "lm_decode=per-op").
struct PlanOverrides {
  std::optional<LinearAttentionAlgorithm> linear_attention;
  std::optional<bool> lm_decode_fused;  // "lm_decode=fused" or "lm_decode=per-op"
  std::optional<bool> icl_workgroup_per_task;  // "icl_layers=per-workgroup" or "icl_layers=per-task"
  std::optional<bool> icl_query_top_layer;     // "icl_top_layer=query" or "icl_top_layer=full"
  std::optional<uint32_t> la_tile;             // "la_tile=32": the parallel linear-attention passes' tile depth
  std::optional<uint32_t> la_scan_groups;      // "la_scan_groups=1": runs of chunks of the parallel state scan
  std::optional<uint32_t> la_window;           // "la_window=256": at most this many chunks per window (parallel form)
  std::optional<uint32_t> la_span;             // "la_span=4": chunks per span of the parallel form's states pass
  std::optional<uint32_t> la_chunk;            // "la_chunk=32": at most this many positions per chunk (parallel form)
  std::optional<bool> la_grouped_columns;      // "la_columns=grouped|strided": the output pass's blocks
  std::optional<bool> la_fused_scores;         // "la_scores=fused|separate": the output pass's scores walk
  std::optional<bool> la_paired_rows;          // "la_rows=paired|single": the output pass's row blocks
  std::optional<uint32_t> block_tile;          // "block_tile=32": the GPU block-attention kernels' tile depth
  std::optional<bool> block_fused_rounds;      // "block_rounds=fused|separate": the GPU kernels' result rounds
  std::optional<uint32_t> block_workgroup;     // "block_workgroup=128": the GPU kernels' invocations (128, 256)
  std::optional<uint32_t> wait_spin_us;        // "wait_spin_us=200": host polling of a fence before sleeping
  std::optional<uint32_t> block_keys;          // "block_keys=4": the CPU block-attention forward's keys per step
  std::optional<bool> block_texel;             // "block_texel=off": the CPU block-attention kernels' rows as texels
  std::optional<bool> rmsnorm_texel;           // "rmsnorm_texel=off": the CPU RMSNorm kernels' rows as texels
  std::optional<bool> elementwise_texel;       // "elementwise_texel=off": the CPU elementwise kernels' texels
  std::optional<bool> icl_texel;               // "icl_texel=off": the ICL layers' and reduction's storage reads
  std::optional<bool> block_dq_from_scores;    // "block_dq=rows|scores": the CPU block-attention backward's dq
  std::optional<uint32_t> icl_tasks_per_workgroup;  // "icl_tasks_per_workgroup=8": the workgroup kernels' tasks
  std::optional<uint32_t> icl_block;  // "icl_block=3": the workgroup kernels' outputs per invocation, 3 x 3
  std::optional<uint32_t>
      icl_layers_per_dispatch;  // "icl_layers_per_dispatch=2": layers per dispatch (the loop budget bounds it)
  std::optional<std::pair<uint32_t, uint32_t>> matmul_tile;  // "matmul_tile=8x8": the GPU matmul's TM x TN
  // "matmul_coop=off|native|emulated": f16 matmuls on cooperative matrices never, always (refused by
  // name where the device has none), or with the fragments emulated (tests the kernel anywhere).
  enum class Coop { kOff, kNative, kEmulated };
  std::optional<Coop> matmul_coop;
  // "matmul_coop_buffers=1|2": the cooperative-matrix matmul's shared stages per k slice (one unless
  // forced: two, where they fit, cost one barrier per slice instead of two but twice the memory).
  std::optional<uint32_t> matmul_coop_buffers;
  // "matmul_coop_groups=2x4": the cooperative-matrix matmul's subgroups along m x n (2x2, 2x4, 4x2).
  std::optional<std::pair<uint32_t, uint32_t>> matmul_coop_groups;
  // "matmul_coop_depth=32|64": the cooperative-matrix matmul's k steps per shared slice.
  std::optional<uint32_t> matmul_coop_depth;
  std::optional<uint32_t> matmul_splits;  // "matmul_splits=4": the GPU matmul's shares of K (1 to 64)
  std::optional<uint32_t> matmul_depth;   // "matmul_depth=32": the GPU matmul's k steps per slice (8, 16, 32)
  std::optional<uint32_t> matmul_buffers;  // "matmul_buffers=2": the GPU matmul's shared stages (1 or 2)
  // "matmul_layout=grouped|strided": the GPU matmul's accumulators in runs of adjacent rows and
  // columns (vector shared loads) or strided over the block (matmul_shared.glsl says which is which).
  std::optional<bool> matmul_grouped;
  // "lm_decode_grid=256x16": GPU decoding's workgroup size and FFN / logit columns per workgroup.
  std::optional<std::pair<uint32_t, uint32_t>> lm_decode_grid;
  // "lm_decode_columns=4": adjacent columns per invocation in the fused decoding products (1, 4, 8
  // or 16; refused where the model's widths do not divide into them).
  std::optional<uint32_t> lm_decode_columns;
  // "lm_decode_rows=4": rows whose weight loads the fused decoding products issue together (1, 2,
  // 4 or 8).
  std::optional<uint32_t> lm_decode_rows;
  // "lm_decode_weights=texel|buffer": the fused decoding kernels read dense f32 weights and packed
  // words (and int8's scales) through uniform texel buffers (true) or as storage buffers.
  std::optional<bool> lm_decode_texel;
  // "lm_decode_shuffle=on|off": CPU drivers' texel decoding takes its input rows by subgroup
  // shuffles where the products allow it (on), or from shared memory (off).
  std::optional<bool> lm_decode_shuffle;
  // "matmul_texel=on|off": the CPU-driver matmul's texel form where the shape allows it, or never.
  std::optional<bool> matmul_texel;
};
// The choices "key=value,..." names, over `base` (a tuning file's, under a forced plan); a key named
// twice is refused (which of the two was meant?).
Result<PlanOverrides> parse_overrides(std::string_view text, PlanOverrides base = {});

// What plans read about a device.
struct DeviceTraits {
  Family family = Family::kGpu;  // the device's preference, or the forced family
  uint32_t subgroup = 32;
  bool subgroup_arithmetic = true;
  uint32_t max_invocations = 1024;
  uint32_t max_groups_x = 65535;  // workgroups one dispatch may have in x (65535 is Vulkan's minimum)
  uint32_t shared_bytes = 32768;
  // Loop iterations one invocation may run (a driver limit, with a margin); UINT64_MAX: none.
  uint64_t loop_budget = UINT64_MAX;
  // The driver's watchdog kills long dispatches: keep each one short.
  bool short_dispatches = false;
  uint64_t max_storage_range = uint64_t(1) << 31;
  uint32_t max_storage_buffers = 64;  // storage-buffer bindings one kernel may use
  // Uniform texel buffers of 4 x f32 (vk/texel_views.hpp): whether the device backs them, the
  // most texels one view holds and the texel bindings one kernel may use.
  bool texel_f32x4 = false;
  bool texel_f16x4 = false;  // the same for 4 x f16 (read as f32)
  bool texel_u32x4 = false;  // and for 4 x u32 (the words of packed weights)
  uint64_t max_texels = 0;
  uint32_t max_texel_bindings = 0;
  // Every subgroup has exactly `subgroup` lanes (the driver cannot vary it): kernels that size
  // per-lane arrays by it may run with several subgroups per workgroup.
  bool fixed_subgroup = true;
  // The device's memory is the system's (integrated and mobile GPUs, CPU drivers): what rill
  // holds there the rest of the app and the system go without.
  bool unified_memory = false;
  std::array<uint32_t, 3> cooperative_matrix_f16{};  // DeviceCaps' M x N x K; zeros: none
  PlanOverrides forced;
  // A tuning file's choices (ContextOptions::tuning_path, written by `rill tune`) with the forced
  // ones over them: each plan takes them where they fit the device and the shape, and plans as
  // without them elsewhere (a forced choice is refused instead). Empty: no tuning.
  std::optional<PlanOverrides> tuned;
};
// The tuning keys a tuning file may hold: the choices that are a device's preference rather than
// a test's or a workaround's (the matmul's tile and K splits follow the shape and stay the plan's).
bool tunable_key(std::string_view key);
// From the device and its quirks; `family` empty: the device's own preference ("cpu" or "gpu"
// otherwise, as ContextOptions::kernel_variant / RILL_KERNEL_VARIANT force it).
DeviceTraits traits_of(const DeviceInfo& device, std::string_view family);
// The traits of the sequence's device with the family and the overrides of its context.
DeviceTraits traits_of(const Sequence& seq);
// The same for a context (its device, family and overrides).
DeviceTraits traits_of(const Context& ctx);

// Workgroup width of one-row-per-workgroup reductions over rows of `dim` (0: any length): one
// subgroup on CPU drivers, 256 invocations on GPUs, widened until each invocation's passes over its
// share of the row fit the loop budget.
uint32_t reduction_workgroup(const DeviceTraits& d, uint64_t dim = 0);
// Elements per load of a CPU-driver register kernel: 4 (its `_vec4` variant, vector_rows.glsl)
// where every row length it reads is a multiple of 4, else 1. On lavapipe each per-lane load is a
// loop over the lanes, and a vector of 4 costs one loop.
uint32_t row_vector_width(std::initializer_list<uint64_t> row_lengths);

// RMSNorm forward (also with the residual). The register kernels run on CPU drivers (rows up to
// 4096) and on GPUs for narrow rows (up to 1024), where the generic kernel's passes over a short
// row are each a wait on memory. `rows` (0: unknown) widens the generic kernel's workgroup on GPUs
// where few long rows would leave most of the device idle.
struct RmsnormPlan {
  bool register_kernel = false;  // rmsnorm_fwd_register: a subgroup keeps its rows in registers
  uint32_t workgroup = 0;        // generic kernel: invocations per row; register kernel: the subgroup
  uint32_t subgroups = 1;        // register kernel: subgroups per workgroup, each with rows of its own
  uint32_t rows_per_group = 1;   // register kernel: rows per subgroup
  uint32_t vector_width = 1;     // elements per load (4 where rows divide into them)
  // CPU drivers: the rows read (x, the residual, the gain; the backward's dy too) as 4-element
  // texels (the `_tx` variants, vector_rows.glsl). Needs `rows`.
  bool texel_rows = false;
};
// Whether the CPU-driver elementwise kernels (add, mul, SiLU, GLU and their backward) take 4
// adjacent elements per invocation, `inputs` tensors of n elements read as 4-element texels (the
// `_tx` variants): n a multiple of 4, where the device backs texels of the storage type.
bool elementwise_texels(const DeviceTraits& d, uint64_t n, bool f16, uint32_t inputs);

// Whether the CPU-driver RMSNorm kernels read rows of `dim` as texels: whole texels, through
// `bindings` texel views of at most max_texels each, where the device backs texels of the storage
// type (and the subgroup reductions the `_tx` variants use).
bool rmsnorm_texel_rows(const DeviceTraits& d, uint32_t dim, uint32_t rows, bool f16, uint32_t bindings);
// `residual`: the fused residual form (one more row tensor read); `f16`: f16 storage.
RmsnormPlan rmsnorm_forward(const DeviceTraits& d, uint32_t dim, uint32_t rows = 0, bool f16 = false,
                            bool residual = false);

// RMSNorm backward where the forward takes the register kernel: rmsnorm_bwd_register, a workgroup
// of `subgroups` subgroups per block of rows computing dx and the block's dgain sums in one pass;
// `blocks` partial rows of dgain are then summed in order. Empty where the generic kernels run.
struct RmsnormBackwardPlan {
  uint32_t subgroup = 0, rows_per_block = 0, blocks = 0;
  uint32_t vector_width = 1;  // elements per load, as the forward's
  uint32_t subgroups = 1;     // per workgroup (one on CPU drivers)
  bool texel_rows = false;    // x, the gain and dy read as texels (as the forward's)
};
std::optional<RmsnormBackwardPlan> rmsnorm_backward(const DeviceTraits& d, uint32_t rows, uint32_t dim,
                                                    bool f16 = false);

// RMSNorm backward's dgain: a two-level column sum, `blocks` partial sums of `rows_per_block` rows
// each (parallel over rows as well as columns), then one ordered sum of the blocks. `columns`: the
// first level's invocations along a row (dim over the vector width), 64 per workgroup. OutOfRange
// when even the largest blocks exceed the loop budget.
struct RmsnormGainPlan {
  uint32_t rows_per_block = 0, blocks = 0;
};
Result<RmsnormGainPlan> rmsnorm_backward_gain(const DeviceTraits& d, uint32_t rows, uint32_t columns);
// The ordered sum of `blocks` partial rows of dgain (rmsnorm_bwd_gain_sum): `slices` invocations
// per column, each over every slices-th block, in workgroups of `workgroup`.
struct RmsnormGainSumPlan {
  uint32_t workgroup = 64, slices = 1;
};
RmsnormGainSumPlan rmsnorm_gain_sum(const DeviceTraits& d, uint32_t blocks);

// Matmul C[b][M, N] = A[b][M, K] B[b][K, N] for `batches` matrices; `a_shared`: one A for all.
struct MatmulShape {
  uint64_t m = 1, n = 1, k = 1, batches = 1;
  bool a_shared = false;
  bool f16 = false;  // f16 storage
  // A and B untransposed (rows contiguous; a packed B's always are), K and N multiples of 8:
  // 16-byte loads fit.
  bool rows_vectorizable = false;
  // A packed B (rill/ops/packed_weights.hpp): values per 32-bit word (2: f16, 4: int8; 0: B is a
  // dense matrix of the storage type) and, for int8, rows per scale.
  uint32_t packed_per_word = 0, packed_group = 0;
};
struct MatmulPlan {
  bool register_kernel = false;  // variant "cpu": one subgroup per workgroup, A shared by shuffles
  // Register kernel, a shared A and C narrower than a tile: the batches' columns side by side as
  // one wide C (one dispatch row of workgroups covers every batch, so narrow matrices fill tiles).
  bool fold_batch = false;
  // Register kernel, rows read as 4-element texels (matmul_tx_*, matmul_register.glsl):
  // untransposed A and B, K a multiple of 4 subgroups, N of the lane's columns; a packed B as
  // texels of 4 words (and int8's scales as texels of 4 columns).
  bool texel_rows = false;
  uint32_t wg_x = 16, wg_y = 16, tm = 4, tn = 4;
  // Shared-memory kernel: K cut into `splits` shares whose partial products a second pass sums
  // (matmul_split_sum), so a product of few blocks and a long K still fills a GPU.
  uint32_t splits = 1;
  bool grouped = false;      // shared-memory kernel: accumulators in runs of adjacent rows and columns
  uint32_t depth = 16;       // shared-memory kernel: k steps per staged slice (spec constant BK)
  uint32_t stages = 1;       // shared-memory kernel: sets of shared tiles taken in turn (spec constant STAGES)
  uint64_t inner_loops = 0;  // loop iterations per invocation (checked against the budget)
  std::string_view variant() const { return register_kernel ? "cpu" : "gpu"; }
};
MatmulPlan matmul(const DeviceTraits& d, const MatmulShape& s);

// Matmul on cooperative matrices (matmul_coop.glsl): f16 storage, f32 accumulation, a workgroup of
// groups_m x groups_n subgroups each owning frags_m x frags_n fragments of fm x fn (k steps of fk).
struct CoopMatmulPlan {
  bool emulated = false;  // fragments as plain arithmetic (matmul_coop_emulated_f16)
  uint32_t subgroup = 32, groups_m = 2, groups_n = 2, frags_m = 2, frags_n = 2, fm = 16, fn = 16, fk = 16;
  uint32_t buffers = 2;  // shared stages of a k slice (spec constant BUFFERS)
  uint32_t depth = gpu::kCoopSliceDepth;  // k steps per slice (spec constant BK)
  uint64_t inner_loops = 0;
  uint32_t workgroup() const { return subgroup * groups_m * groups_n; }
  uint32_t block_m() const { return groups_m * frags_m * fm; }
  uint32_t block_n() const { return groups_n * frags_n * fn; }
  // The kernel's shared memory: the stages of A (block_m rows of a slice's halves) and B (a slice's
  // rows of block_n), each row padded, and the subgroups' f32 fragment stage.
  uint64_t shared_bytes() const {
    const uint64_t pad = gpu::kCoopRowPadHalves;
    return 2ull * buffers * (block_m() * (depth + pad) + depth * (block_n() + pad)) +
           4ull * groups_m * groups_n * fm * fn;
  }
};
// The plan where the device has cooperative matrices (or they are forced) and the shape fits them
// (f16, rows vectorizable); empty where matmul() decides.
std::optional<CoopMatmulPlan> cooperative_matmul(const DeviceTraits& d, const MatmulShape& s);

// Matmul with a packed B and at most 4 rows (a decoding step): matvec_packed.glsl, one word column
// of B per invocation. Empty when the tiled kernels serve the shape better.
struct PackedMatvecPlan {
  uint32_t workgroup = 64;
  uint32_t rows = 1;         // spec constant ROWS = M
  uint32_t words = 1;        // word columns per invocation
  uint64_t inner_loops = 0;  // K plus one per int8 group
};
std::optional<PackedMatvecPlan> packed_matvec(const DeviceTraits& d, uint64_t m, uint64_t k, uint32_t group);

// What a block-attention plan depends on: the block, the heads' widths, the rows of all heads
// together (B * H * N: the texel views' size) and the storage type.
struct BlockAttentionShape {
  uint32_t block = 64, dk = 64, dv = 64;
  uint64_t rows = 0;   // B * H * N
  uint64_t heads = 1;  // B * H
  bool f16 = false;
};

// Block attention forward.
struct BlockAttentionPlan {
  bool register_kernel = false;  // block_attention_fwd_cpu: one subgroup, rows_per_lane query rows each
  uint32_t rows_per_lane = 1;
  uint32_t keys_per_step = 1;  // keys whose weights share one softmax rescale of the accumulators
  bool texel_rows = false;     // the register kernel reads q, k and v as 4-element texels (_tx)
  uint32_t subgroup = 0;
  // GPUs, blocks up to 64: block_attention_fwd_tiled (logits and P V as shared-memory tile products);
  // past 64, block_attention_fwd_flash (a workgroup per 64-row query tile, the online softmax over
  // the block's 64-key tiles); else the generic kernel (one invocation per query row).
  bool tiled = false, flash = false;
  uint32_t workgroup = 0, tile = 0;
  // The tiled and flash kernels: a product whose results take several rounds of the workgroup's
  // 4 x 4 blocks (heads past 64 at 256 invocations) walks the tiles of its operand once for every
  // round (false) or once for all of them (block_attention_tiles.glsl's FUSE_ROUNDS).
  bool fused_rounds = false;
};
BlockAttentionPlan block_attention_forward(const DeviceTraits& d, const BlockAttentionShape& s);

// Block attention backward. GPUs, blocks up to 64: block_attention_bwd_tiled, every gradient of a
// block from one workgroup in one dispatch; past 64, block_attention_bwd_flash, a dispatch of
// 64-row query tiles (delta, dq) and one of key tiles (dk, dv). CPU drivers: block_attention_bwd_cpu, a dispatch of
// query-row subgroups and an independent one of key-row subgroups, rows_per_lane rows per lane.
// Otherwise the generic kernels: one invocation per query row (delta, dq), then per key row (dk, dv).
struct BlockAttentionBackwardPlan {
  bool tiled = false, flash = false;
  uint32_t workgroup = 0, tile = 0;
  bool fused_rounds = false;  // as the forward's
  bool register_kernel = false;
  uint32_t rows_per_lane = 1;
  bool texel_rows = false;  // the register kernel reads q, k, v, o and dO as 4-element texels (_tx)
  uint32_t subgroup = 0;
  // The register kernel: the key groups write dS to a workspace and dq = dS K follows from it, in
  // windows of scores_blocks blocks (else query groups compute the scores and dP again for dq);
  // a block's dS per head is scores_width x scores_width (its rows padded to whole row groups).
  bool dq_from_scores = false;
  uint32_t scores_blocks = 0, scores_width = 0;
  // dq = dS K reads dS as 4-element texels too (`_tx_dq`; with texel_rows, where six texel
  // bindings fit).
  bool scores_texels = false;
};
BlockAttentionBackwardPlan block_attention_backward(const DeviceTraits& d, const BlockAttentionShape& s);

// Causal linear attention forward over N positions of B*H heads.
struct LinearAttentionPlan {
  LinearAttentionAlgorithm algorithm = LinearAttentionAlgorithm::kChunkedSerial;
  uint32_t chunk = 64;
  uint32_t columns_per_lane = 0;        // register scan: state columns per lane
  uint32_t vector_width = 1;            // register scan: elements per load (4: Dk, Dv and the columns in 4s)
  uint64_t positions_per_dispatch = 0;  // register scan
  uint32_t chunks_per_dispatch = 0;     // chunked kernels: chunks one dispatch (or window) covers
  uint32_t workgroup = 64;              // chunked kernels
  uint32_t output_workgroup = 0;        // parallel: the output pass's workgroup (one per block of a chunk)
  uint32_t tile = 0;                    // parallel: rows (or inner slices) per shared-memory tile
  uint32_t scan_groups = 1;             // parallel: runs of the state scan's steps (chunks or spans)
  uint32_t span = 1;                    // parallel: chunks per states workgroup (the scan walks spans)
  bool grouped_columns = false;         // parallel: output blocks of 4 neighbouring columns (vector loads)
  bool fused_scores = false;            // parallel, causal forms: the scores in the same walk as f(A) P_c
  bool paired_rows = false;             // parallel, causal forms: row-block pairs over h(C) resident
};
struct LinearAttentionShape {
  uint64_t heads = 1;  // B * H
  uint64_t n = 1;
  uint32_t dk = 64, dv = 64, chunk = 64;
  uint32_t chunks_per_dispatch = 0;  // the caller's bound (0: the plan's)
  bool causal = true;                // the non-causal forms have no causal product (la_rows is moot)
};
// Plans the causal forward (the serial chunked kernel's chunks come from linear_attention_serial).
// OutOfRange when even a chunk of one position exceeds the loop budget; InvalidArgument when a
// forced algorithm cannot run on the device or shape.
Result<LinearAttentionPlan> linear_attention_forward(const DeviceTraits& d, const LinearAttentionShape& s);
// Plans the non-causal forward (phi(Q) times the whole sequence's state): the register scan's
// state and apply passes on CPU drivers, the parallel passes on GPUs, else the serial kernel's.
Result<LinearAttentionPlan> linear_attention_noncausal(const DeviceTraits& d, const LinearAttentionShape& s);
// The serial chunked kernel: the caller's chunk, halved while one chunk's loops exceed the budget
// (wide heads on lavapipe: LRPE doubles Dk to 256), and the chunks one dispatch covers.
struct SerialChunks {
  uint32_t chunk = 64, chunks_per_dispatch = 1;
};
Result<SerialChunks> linear_attention_serial(const DeviceTraits& d, const LinearAttentionShape& s);
// Plans the backward: its three gradients are each a form like the forward (causal: two of them
// backward in time), each a register scan on CPU drivers, parallel over chunks on GPUs, else the
// serial chunked kernel.
Result<LinearAttentionPlan> linear_attention_backward(const DeviceTraits& d, const LinearAttentionShape& s);

// Decoding one position of a TransNormer (lm::Session::decode): the fused kernels
// (shaders/lm/decode_*.glsl: a layer's mixer in one dispatch, its FFN in another, then the logits)
// where they fit the device, else the per-op graph (a dozen dispatches per layer).
struct LmDecodeShape {
  uint32_t width = 256, heads = 8, head_dim = 32, ffn = 512, vocab = 256;
  uint64_t max_keys = 64;            // most keys one softmax-attention step reads (0: none)
  bool lrpe = false;                 // LRPE doubles the linear-attention features
  uint32_t bindings_per_weight = 1;  // 2 for int8 and int4 weights (words and scales)
  uint32_t int8_group = 0;           // int8 or int4 weights: rows per scale
  bool f16_words = false;            // f16 weights packed two per word
  bool int4_words = false;           // int4 weights (int8_group their group)
  bool dense_f32 = false;            // f32 activations with dense f32 weights
  bool f32_activations = false;
  uint64_t largest_weight = 0;       // elements of the largest weight matrix (the head's, usually)
  uint32_t widest_head_block = 0;    // most logits one dispatch computes (a head in blocks); 0: vocab
};
struct LmDecodePlan {
  bool fused = false;
  std::string per_op_reason;  // why not fused
  uint32_t workgroup = 64;
  uint32_t ffn_slice = 0;            // FFN columns per workgroup
  uint32_t logit_columns = 0;        // logits per workgroup
  uint32_t in_max = 0, out_max = 0;  // the kernels' shared rows (spec constants IN_MAX, OUT_MAX)
  uint32_t lane_groups = 0;          // CPU drivers: groups of 4 adjacent columns per invocation, a load each per row
  uint32_t row_batch = 1;            // rows whose weight loads a product issues before their FMAs
  // Dense f32 weights read through uniform texel buffers, 4 columns per texelFetch (CPU drivers:
  // lavapipe gathers a lane's 16 bytes at once there, against a bounds-checked loop over the
  // lanes per component for a storage-buffer load).
  bool texel_weights = false;
  // Packed weights on CPU drivers read as texels of 4 u32 words: int8 at 16 columns per invocation
  // (a row's four words one texel, a group's 16 scales four texels; the kernels' _q8_tx form), f16
  // at 8 or 16 (a row's words one or two texels; _w16_tx).
  bool texel_words = false;
  // Texel weights on CPU drivers: the products' input rows reach the lanes by subgroup shuffles
  // (decode_common.glsl's X_SHUFFLE), where every product's blocks (a head's columns, an FFN
  // slice, the width, a workgroup's logits) divide into whole subgroups of column groups.
  bool x_shuffle = false;
};
// InvalidArgument when fused is forced and does not fit.
Result<LmDecodePlan> lm_decode(const DeviceTraits& d, const LmDecodeShape& s);

// Microseconds the host polls a submission's fence before it sleeps on it (Submissions::wait). A
// sleeping wait wakes some tens of microseconds after the GPU finishes (an empty submission's round
// trip took about 40 us on an H200), as much as a fifth of a decoded token; polling costs a host
// core meanwhile. Discrete GPUs: 200 us, which covers a decoding step's wait; CPU drivers run the
// work on the host's cores (polling would take one from them) and phones and other unified-memory
// GPUs share the host's power budget: 0.
uint32_t wait_spin_us(const DeviceTraits& d);

// Positions per prefill segment when the model's options leave it to the device (0): longer
// segments make each matmul bigger, which a big GPU needs to fill itself; memory grows with the
// segment, never with the prompt.
uint32_t lm_prefill_segment(const DeviceTraits& d);

// The ICL layer kernels (shaders/icl/icl_layer_*): one task per invocation, the task in private
// arrays (CPU drivers: tasks on SIMD lanes, no barrier), or a workgroup per few tasks, the tasks in
// shared memory and each matrix product spread over a task's invocations (GPUs: one invocation per
// task leaves most of a big GPU idle) where their shared arrays fit. Either runs several layers per
// dispatch, the tokens and the gradient kept on chip between them, as the loop budget allows.
struct IclLayersShape {
  uint32_t width = 6, tokens = 21;  // d + 1, n + 1
  uint64_t tasks = 0;               // tasks per dispatch (every model of a grid); 0: unknown
  // Tasks of one model (0: `tasks`). The kernels are chosen by it, so that a grid's model runs the
  // kernels it runs alone and trains bit for bit as it would there.
  uint64_t model_tasks = 0;
  uint32_t layers = 1;
  uint32_t layer_params = 0;      // parameters per layer of one model (heads x their block)
  uint64_t layer_iterations = 0;  // loop iterations of one layer's pass, a task per invocation
};
struct IclLayersPlan {
  bool workgroup_per_task = false;   // the workgroup kernels (several tasks per workgroup)
  uint32_t workgroup = 64;           // invocations per task (workgroup kernels)
  uint32_t tasks_per_workgroup = 1;  // workgroup kernels: a power of two up to 64
  uint32_t output_block = 1;         // workgroup kernels: each invocation's products in blocks of this x this
  uint32_t layers_per_dispatch = 1;
  // The top layer computes only what the loss reads (the query's prediction and its gradient;
  // icl_layer_fwd.glsl); false (forced, "icl_top_layer=full") computes it whole, as the layers below.
  bool query_top_layer = true;
  // The per-task kernels read as texels (`_tx` kernels): the forward its input tokens, the backward
  // the tokens, A and B and the output gradient. CPU drivers, where the device backs 4 x f32 texel
  // views of the workspace's arrays.
  bool texel_reads = false;
  std::string reason;  // why this variant
};
// InvalidArgument when the workgroup-per-task kernels are forced and do not fit.
Result<IclLayersPlan> icl_layers(const DeviceTraits& d, const IclLayersShape& s);

// The ICL task sampler: an invocation per (task, token) on GPUs (a whole task per invocation left
// a big GPU mostly idle: 81 us of a 240 us training step on an H200), where the tokens fit the
// grid's z; a task per invocation on CPU drivers, which would only repeat the per-task draws.
bool icl_sample_per_token(const DeviceTraits& d, uint32_t tokens);

// OutOfRange naming the op when `iterations` per invocation exceed the loop budget.
Status check_loop_budget(const DeviceTraits& d, const DeviceInfo& device, uint64_t iterations, const char* op,
                         const char* what);

// One line per op: the plan the device gets at a representative shape (for `rill info`).
struct PlanSummary {
  std::string op, shape, plan;
};
std::vector<PlanSummary> summarize(const DeviceTraits& d);

}  // namespace rill::ops::plan
