// Kernel plans (kernel_plan.hpp): the one place that reads device traits to choose kernels. This file
// has the traits, the forced choices and the summaries; each op family's plans are in
// kernel_plan_{norm,matmul,attention,models}.cpp.
#include "kernel_plan.hpp"

#include <algorithm>
#include <charconv>

#include "access.hpp"
#include "kernel_plan_util.hpp"
#include "sequence_impl.hpp"
#include "vk/quirks.hpp"

namespace rill::ops::plan {

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
  d.texel_f32x4 = device.caps.texel_buffer_f32x4;
  d.texel_f16x4 = device.caps.texel_buffer_f16x4;
  d.texel_u32x4 = device.caps.texel_buffer_u32x4;
  d.max_texels = device.caps.max_texel_buffer_elements;
  d.max_texel_bindings = device.caps.max_sampled_images_per_stage;
  d.cooperative_matrix_f16 = device.caps.cooperative_matrix_f16;
  // Without subgroup size control a driver need not say whether it varies the size (Intel's do).
  d.fixed_subgroup =
      device.caps.subgroup_size_control && device.caps.min_subgroup_size == device.caps.max_subgroup_size;
  return d;
}

namespace {

// The device's traits with its context's family and forced choices (validated at context creation and
// by Context::set_kernel_plan).
DeviceTraits traits_in(const DeviceInfo& device, const rill::detail::ContextImpl& ctx) {
  DeviceTraits d = traits_of(device, ctx.pipelines->preferred_variant());
  if (auto forced = parse_overrides(ctx.kernel_plan); forced.is_ok()) d.forced = forced.value();
  // Later keys win: the forced choices over the tuned ones (both validated at creation).
  if (!ctx.tuned_plan.empty())
    if (auto tuned = parse_overrides(ctx.tuned_plan + "," + ctx.kernel_plan); tuned.is_ok()) d.tuned = tuned.value();
  return d;
}

}  // namespace

DeviceTraits traits_of(const Sequence& seq) { return traits_in(seq.device(), *rill::detail::Access::impl(seq).ctx); }

DeviceTraits traits_of(const Context& ctx) { return traits_in(ctx.device(), rill::detail::Access::impl(ctx)); }

bool tunable_key(std::string_view key) {
  for (std::string_view k : {"linear_attention",
                             "lm_decode",
                             "lm_decode_grid",
                             "lm_decode_columns",
                             "lm_decode_rows",
                             "lm_decode_weights",
                             "lm_decode_shuffle",
                             "la_tile",
                             "la_scan_groups",
                             "la_window",
                             "la_span",
                             "block_tile",
                             "block_keys",
                             "block_texel",
                             "block_dq",
                             "rmsnorm_texel",
                             "elementwise_texel",
                             "icl_texel",
                             "icl_layers",
                             "icl_tasks_per_workgroup",
                             "icl_layers_per_dispatch",
                             "icl_top_layer",
                             "matmul_layout",
                             "matmul_coop",
                             "matmul_depth",
                             "matmul_texel"})
    if (key == k) return true;
  return false;
}

namespace {

// The whole of `value` as a count; nothing where it is not one (empty, a sign, trailing text).
std::optional<uint32_t> count_of(std::string_view value) {
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return n;
}

bool one_of(std::optional<uint32_t> n, std::initializer_list<uint32_t> allowed) {
  return n && std::find(allowed.begin(), allowed.end(), *n) != allowed.end();
}

bool power_of_two_up_to(std::optional<uint32_t> n, uint32_t most) {
  return n && *n >= 1 && *n <= most && (*n & (*n - 1)) == 0;
}

}  // namespace

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
    if (key == "icl_top_layer") {
      if (value != "query" && value != "full")
        return invalid_argument("kernel plan: icl_top_layer is '" + std::string(value) + "'; use query or full");
      out.icl_query_top_layer = value == "query";
      continue;
    }
    if (key == "la_tile" || key == "block_tile") {
      // The tile depth of the parallel linear-attention passes or of the GPU block-attention kernels
      // (rows or inner slices staged in shared memory per step).
      const std::optional<uint32_t> n = count_of(value);
      if (!one_of(n, {4, 8, 16, 32}))
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) +
                                "'; use 4, 8, 16 or 32");
      (key == "la_tile" ? out.la_tile : out.block_tile) = *n;
      continue;
    }
    if (key == "block_keys") {
      const std::optional<uint32_t> n = count_of(value);
      if (!power_of_two_up_to(n, 16))
        return invalid_argument("kernel plan: block_keys is '" + std::string(value) + "'; use 1, 2, 4, 8 or 16");
      out.block_keys = *n;
      continue;
    }
    // The parallel linear-attention form's powers of two: chunks per window (its chunk states are
    // written, scanned and read back per window, so a smaller one may stay in a GPU's L2 cache),
    // chunks per span of the states pass (1: each chunk's own state), and runs the state scan cuts a
    // window into (1: one serial walk).
    if (key == "la_window" || key == "la_span" || key == "la_scan_groups") {
      const uint32_t least = key == "la_window" ? 16 : 1, most = key == "la_window" ? 4096 : 64;
      const std::optional<uint32_t> n = count_of(value);
      if (!n || *n < least || !power_of_two_up_to(n, most))
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) +
                                "'; use a power of two from " + std::to_string(least) + " to " + std::to_string(most));
      (key == "la_window" ? out.la_window : key == "la_span" ? out.la_span : out.la_scan_groups) = *n;
      continue;
    }
    if (key == "icl_tasks_per_workgroup" || key == "icl_layers_per_dispatch") {
      // Tasks per workgroup: a power of two up to 64 (a cohort's model stride is a multiple of 64).
      const bool tasks = key == "icl_tasks_per_workgroup";
      const std::optional<uint32_t> n = count_of(value);
      if (tasks ? !power_of_two_up_to(n, 64) : (!n || *n < 1 || *n > 1024))
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) + "'; use " +
                                (tasks ? "a power of two from 1 to 64" : "a count from 1 to 1024"));
      (tasks ? out.icl_tasks_per_workgroup : out.icl_layers_per_dispatch) = *n;
      continue;
    }
    if (key == "lm_decode") {
      if (value != "fused" && value != "per-op")
        return invalid_argument("kernel plan: lm_decode is '" + std::string(value) + "'; use fused or per-op");
      out.lm_decode_fused = value == "fused";
      continue;
    }
    if (key == "matmul_texel" || key == "block_texel" || key == "rmsnorm_texel" || key == "elementwise_texel" ||
        key == "icl_texel" || key == "lm_decode_shuffle") {
      if (value != "on" && value != "off")
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) + "'; use on or off");
      (key == "matmul_texel"        ? out.matmul_texel
       : key == "block_texel"       ? out.block_texel
       : key == "rmsnorm_texel"     ? out.rmsnorm_texel
       : key == "icl_texel"         ? out.icl_texel
       : key == "lm_decode_shuffle" ? out.lm_decode_shuffle
                                    : out.elementwise_texel) = value == "on";
      continue;
    }
    if (key == "block_dq") {
      if (value != "rows" && value != "scores")
        return invalid_argument("kernel plan: block_dq is '" + std::string(value) + "'; use rows or scores");
      out.block_dq_from_scores = value == "scores";
      continue;
    }
    if (key == "lm_decode_weights") {
      if (value != "texel" && value != "buffer")
        return invalid_argument("kernel plan: lm_decode_weights is '" + std::string(value) + "'; use texel or buffer");
      out.lm_decode_texel = value == "texel";
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
      const std::optional<uint32_t> n = count_of(value);
      if (!n || *n < 1 || *n > 64)
        return invalid_argument("kernel plan: matmul_splits is '" + std::string(value) + "'; use 1 to 64");
      out.matmul_splits = *n;
      continue;
    }
    if (key == "matmul_depth") {
      const std::optional<uint32_t> n = count_of(value);
      if (!one_of(n, {8, 16, 32}))
        return invalid_argument("kernel plan: matmul_depth is '" + std::string(value) + "'; use 8, 16 or 32");
      out.matmul_depth = *n;
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
    if (key == "matmul_coop_groups") {
      if (value != "2x2" && value != "2x4" && value != "4x2")
        return invalid_argument("kernel plan: matmul_coop_groups is '" + std::string(value) + "'; use 2x2, 2x4 or 4x2");
      out.matmul_coop_groups = std::pair<uint32_t, uint32_t>{uint32_t(value[0] - '0'), uint32_t(value[2] - '0')};
      continue;
    }
    if (key == "matmul_coop_buffers") {
      const std::optional<uint32_t> n = count_of(value);
      if (!one_of(n, {1, 2}))
        return invalid_argument("kernel plan: matmul_coop_buffers is '" + std::string(value) + "'; use 1 or 2");
      out.matmul_coop_buffers = *n;
      continue;
    }
    if (key == "lm_decode_grid") {
      // GPU decoding: invocations per workgroup x FFN and logit columns per workgroup, e.g. 256x16.
      const size_t x = value.find('x');
      const std::optional<uint32_t> wg = x == std::string_view::npos ? std::nullopt : count_of(value.substr(0, x));
      const std::optional<uint32_t> cols = x == std::string_view::npos ? std::nullopt : count_of(value.substr(x + 1));
      if (!power_of_two_up_to(wg, 1024) || *wg < 32 || !cols || *cols < 4 || *cols > 256 || *cols % 4 != 0)
        return invalid_argument("kernel plan: lm_decode_grid is '" + std::string(value) +
                                "'; use WORKGROUPxCOLUMNS, a power of two from 32 to 1024 and a multiple of 4 "
                                "from 4 to 256 (e.g. 256x16)");
      out.lm_decode_grid = std::pair<uint32_t, uint32_t>{*wg, *cols};
      continue;
    }
    if (key == "lm_decode_rows" || key == "lm_decode_columns") {
      const bool rows = key == "lm_decode_rows";
      const std::optional<uint32_t> n = count_of(value);
      if (rows ? !one_of(n, {1, 2, 4, 8}) : !one_of(n, {1, 4, 8, 16}))
        return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) + "'; use " +
                                (rows ? "1, 2, 4 or 8" : "1, 4, 8 or 16"));
      (rows ? out.lm_decode_rows : out.lm_decode_columns) = *n;
      continue;
    }
    if (key != "linear_attention")
      return invalid_argument(
          "kernel plan: unknown key '" + std::string(key) +
          "' (known: block_dq, block_keys, block_texel, block_tile, elementwise_texel, icl_layers, icl_texel, "
          "icl_layers_per_dispatch, "
          "icl_tasks_per_workgroup, icl_top_layer, "
          "la_scan_groups, la_span, la_tile, la_window, linear_attention, "
          "lm_decode, lm_decode_columns, lm_decode_grid, lm_decode_rows, lm_decode_shuffle, lm_decode_weights, "
          "matmul_coop, "
          "matmul_coop_buffers, "
          "matmul_coop_groups, "
          "matmul_depth, matmul_layout, matmul_splits, matmul_texel, "
          "matmul_tile, rmsnorm_texel)");
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

Status check_loop_budget(const DeviceTraits& d, const DeviceInfo& device, uint64_t iterations, const char* op,
                         const char* what) {
  if (iterations <= d.loop_budget) return Status::ok();
  return out_of_range(std::string(op) + ": " + what + " needs about " + std::to_string(iterations) +
                      " loop iterations per invocation; " + device.name + " stops loops after " +
                      std::to_string(vk::quirk_flags_for(device).max_loop_iterations));
}

namespace {

// The generic RMSNorm backward's plan in words: dx's workgroup per row and dgain's row blocks.
std::string generic_backward(const DeviceTraits& d, const RmsnormPlan& r, uint32_t rows, uint32_t dim) {
  std::string text = "a workgroup of " + std::to_string(r.workgroup) + " per row for dx; dgain";
  const auto gain = rmsnorm_backward_gain(d, rows, dim / r.vector_width);
  if (!gain.is_ok()) return text + ": " + gain.status().message();
  return text + " in " + std::to_string(gain->blocks) + " blocks of " + std::to_string(gain->rows_per_block) + " rows" +
         (gain->blocks > 1 ? ", then their ordered sum" : "");
}

}  // namespace

std::vector<PlanSummary> summarize(const DeviceTraits& d) {
  std::vector<PlanSummary> out;
  auto slices = [](uint32_t n) { return n > 1 ? ", summed in " + std::to_string(n) + " slices" : std::string(); };
  auto texels = [](bool on) { return std::string(on ? ", rows read as texels" : ""); };
  for (const auto& [rows, dim] : {std::pair<uint32_t, uint32_t>{4096, 4096}, {16384, 256}, {64, 8192}}) {
    const std::string shape = std::to_string(rows) + " x " + std::to_string(dim);
    const RmsnormPlan r = rmsnorm_forward(d, dim, rows);
    out.push_back(
        {"rmsnorm_forward", shape,
         (r.register_kernel ? "register kernel, " + std::to_string(r.rows_per_group) + " rows per subgroup of " +
                                  std::to_string(r.workgroup) +
                                  (r.subgroups > 1 ? ", " + std::to_string(r.subgroups) + " per workgroup" : "")
                            : "generic kernel, " + std::to_string(r.workgroup) + " invocations per row") +
             texels(r.texel_rows)});
    const auto rb = rmsnorm_backward(d, rows, dim);
    out.push_back({"rmsnorm_backward", shape,
                   rb ? "one pass per block of " + std::to_string(rb->rows_per_block) + " rows (" +
                            std::to_string(rb->blocks) + " blocks of dgain sums" +
                            slices(rmsnorm_gain_sum(d, rb->blocks).slices) + ")" + texels(rb->texel_rows)
                      : generic_backward(d, r, rows, dim) + texels(rmsnorm_texel_rows(d, dim, rows, false, 3))});
  }
  out.push_back({"reduction rows", "any", std::to_string(reduction_workgroup(d)) + " invocations per row"});
  for (const auto& [rows, inner] : {std::pair<uint64_t, uint64_t>{1, 1024}, {1024, 1024}, {256, 4096}}) {
    const MatmulPlan m = matmul(d, {.m = rows, .n = 1024, .k = inner, .rows_vectorizable = true});
    out.push_back({"matmul", std::to_string(rows) + " x 1024 x " + std::to_string(inner),
                   std::string(m.variant()) + " variant, workgroup " + std::to_string(m.wg_x) + " x " +
                       std::to_string(m.wg_y) + ", tile " + std::to_string(m.wg_y * m.tm) + " x " +
                       std::to_string(m.wg_x * m.tn) +
                       (m.register_kernel ? "" : ", slices " + std::to_string(m.depth) + " deep") +
                       (m.splits > 1 ? ", K in " + std::to_string(m.splits) + " shares" : "") +
                       (m.grouped ? ", grouped accumulators" : "") + (m.texel_rows ? ", rows read as texels" : "")});
  }
  // A language model's projection with int8 weights in groups of 64 rows (ModelOptions::weights).
  const MatmulPlan int8 =
      matmul(d, {.m = 2048, .n = 512, .k = 256, .rows_vectorizable = true, .packed_per_word = 4, .packed_group = 64});
  out.push_back({"matmul, int8 weights", "2048 x 512 x 256, groups of 64",
                 std::string(int8.variant()) + " variant, tile " + std::to_string(int8.wg_y * int8.tm) + " x " +
                     std::to_string(int8.wg_x * int8.tn) +
                     (int8.texel_rows ? ", A, the weights' words and scales read as texels" : "")});
  const MatmulShape f16_square{.m = 4096, .n = 4096, .k = 4096, .f16 = true, .rows_vectorizable = true};
  if (const auto coop = cooperative_matmul(d, f16_square))
    out.push_back({"matmul f16", "4096 x 4096 x 4096",
                   std::string(coop->emulated ? "cooperative matrices emulated" : "cooperative matrices") + ", " +
                       std::to_string(coop->fm) + " x " + std::to_string(coop->fn) + " x " + std::to_string(coop->fk) +
                       " fragments, block " + std::to_string(coop->block_m()) + " x " +
                       std::to_string(coop->block_n()) + ", workgroup " + std::to_string(coop->workgroup()) + ", " +
                       std::to_string(coop->buffers) + (coop->buffers == 1 ? " shared stage" : " shared stages")});
  // The bench's shape: 4 heads of 64 over 16K positions.
  const BlockAttentionShape bs{.block = 64, .dk = 64, .dv = 64, .rows = 4 * 16384, .heads = 4};
  const BlockAttentionPlan b = block_attention_forward(d, bs);
  out.push_back({"block_attention_forward", "block 64, D 64",
                 b.register_kernel ? "register kernel, " + std::to_string(b.rows_per_lane) + " query rows per lane, " +
                                         std::to_string(b.keys_per_step) + " keys per step" +
                                         (b.texel_rows ? ", rows read as texels" : "")
                 : b.tiled ? "tiled kernel, one workgroup of " + std::to_string(b.workgroup) + " per block, tiles of " +
                                 std::to_string(b.tile)
                           : "generic kernel, one invocation per query row"});
  const BlockAttentionBackwardPlan bb = block_attention_backward(d, bs);
  out.push_back(
      {"block_attention_backward", "block 64, D 64",
       bb.register_kernel
           ? std::string(bb.dq_from_scores ? "register kernel, key row groups writing dS, then dq = dS K from it, "
                                           : "register kernel, query then key row groups, ") +
                 std::to_string(bb.rows_per_lane) + " rows per lane" + (bb.texel_rows ? ", rows read as texels" : "") +
                 (bb.scores_texels ? ", dS too" : "")
       : bb.tiled ? "tiled kernel, one workgroup of " + std::to_string(bb.workgroup) +
                        " per block for every gradient, tiles of " + std::to_string(bb.tile)
                  : "generic kernels, one invocation per query row, then per key row"});
  auto describe = [](const Result<LinearAttentionPlan>& la) {
    if (!la.is_ok()) return la.status().message();
    std::string text(algorithm_name(la.value().algorithm));
    if (la.value().algorithm != LinearAttentionAlgorithm::kRegisterScan)
      text += ", " + std::to_string(la.value().chunks_per_dispatch) + " chunks per window";
    if (la.value().algorithm == LinearAttentionAlgorithm::kChunkedParallel) {
      text += ", tiles of " + std::to_string(la.value().tile);
      if (la.value().span > 1) text += ", states in spans of " + std::to_string(la.value().span) + " chunks";
    }
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
  if (auto icl = icl_layers(
          d, {.width = 11, .tokens = 21, .tasks = 2048, .layers = 3, .layer_params = 242, .layer_iterations = 14800});
      icl.is_ok()) {
    const std::string layers =
        ", " + std::to_string(icl->layers_per_dispatch) + " of 3 layers per dispatch" +
        (icl->query_top_layer ? ", the top layer only what the loss reads" : ", the top layer whole") +
        (icl->texel_reads ? ", the backward's reads as texels" : "");
    out.push_back({"icl layers", "d 10, n 20, L 3 (Vladymyrov et al.)",
                   icl->workgroup_per_task ? "workgroups of " + std::to_string(icl->tasks_per_workgroup) + " x " +
                                                 std::to_string(icl->workgroup) + " (tasks x invocations)" + layers +
                                                 " (" + icl->reason + ")"
                                           : "a task per invocation" + layers + " (" + icl->reason + ")"});
  }
  LmDecodeShape lm;  // the default model, f32
  lm.dense_f32 = true;
  lm.largest_weight = uint64_t(lm.width) * lm.ffn;
  const auto planned = lm_decode(d, lm);
  const LmDecodePlan decode = planned.is_ok() ? planned.value() : fused_decode_plan(d, lm);
  out.push_back({"lm decode", "width 256, 8 heads, FFN 512, vocab 256",
                 decode.fused ? "fused: 2 dispatches per layer, workgroups of " + std::to_string(decode.workgroup) +
                                    ", FFN slices of " + std::to_string(decode.ffn_slice) + ", " +
                                    std::to_string(decode.logit_columns) + " logits per workgroup, weight loads " +
                                    std::to_string(decode.row_batch) + " rows at a time, " +
                                    std::to_string(std::max(4 * decode.lane_groups, 1u)) + " columns per invocation" +
                                    (decode.texel_weights ? ", f32 weights read as texels" : "") +
                                    (decode.texel_words ? ", int8 words and scales read as texels" : "") +
                                    (decode.x_shuffle ? ", inputs by subgroup shuffles" : "")
                              : "per-op: " + decode.per_op_reason});
  return out;
}

}  // namespace rill::ops::plan

namespace rill {

std::vector<KernelPlanLine> describe_kernel_plans(const DeviceInfo& device, std::string_view family) {
  return describe_kernel_plans(device, family, {}).value();  // no forced choices: nothing to refuse
}

Result<std::vector<KernelPlanLine>> describe_kernel_plans(const DeviceInfo& device, std::string_view family,
                                                          std::string_view kernel_plan) {
  ops::plan::DeviceTraits traits = ops::plan::traits_of(device, family);
  RILL_ASSIGN_OR_RETURN(traits.forced, ops::plan::parse_overrides(kernel_plan));
  std::vector<KernelPlanLine> out;
  out.push_back({"kernel family", "", std::string(ops::plan::family_name(traits.family))});
  for (auto& s : ops::plan::summarize(traits)) out.push_back({std::move(s.op), std::move(s.shape), std::move(s.plan)});
  return out;
}

}  // namespace rill
