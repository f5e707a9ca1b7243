// The kernel plan's forcible choices (kernel_plan.hpp): one table of keys, each with the values it
// takes, what it chooses and whether a tuning file may hold it. parse_overrides, tunable_key, the
// unknown-key message and `rill info --plan-keys` (rill::kernel_plan_keys) all read this table,
// so a key is defined once.
#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <vector>

#include "kernel_plan.hpp"

namespace rill::ops::plan {
namespace {

// Sets a PlanOverrides field from a value; false where the value is not one of the key's values.
using Setter = bool (*)(std::string_view value, PlanOverrides& out);

struct KeyEntry {
  std::string_view key;
  std::string_view values;  // as the refusal and `rill info --plan-keys` say them
  std::string_view chooses;
  bool tunable;  // a device's preference (a tuning file may hold it), not a test's or a workaround's
  Setter set;
};

// The whole of `value` as a count; nothing where it is not one (empty, a sign, trailing text).
std::optional<uint32_t> count_of(std::string_view value) {
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return n;
}

bool set_one_of(std::string_view value, std::initializer_list<uint32_t> allowed, std::optional<uint32_t>& field) {
  const std::optional<uint32_t> n = count_of(value);
  if (!n || std::find(allowed.begin(), allowed.end(), *n) == allowed.end()) return false;
  field = *n;
  return true;
}

bool set_range(std::string_view value, uint32_t least, uint32_t most, std::optional<uint32_t>& field) {
  const std::optional<uint32_t> n = count_of(value);
  if (!n || *n < least || *n > most) return false;
  field = *n;
  return true;
}

bool set_power_of_two(std::string_view value, uint32_t least, uint32_t most, std::optional<uint32_t>& field) {
  const std::optional<uint32_t> n = count_of(value);
  if (!n || *n < least || *n > most || (*n & (*n - 1)) != 0) return false;
  field = *n;
  return true;
}

// A two-way choice: `yes` sets the field true, `no` false.
bool set_either(std::string_view value, std::string_view yes, std::string_view no, std::optional<bool>& field) {
  if (value != yes && value != no) return false;
  field = value == yes;
  return true;
}

bool set_on_off(std::string_view value, std::optional<bool>& field) { return set_either(value, "on", "off", field); }

// One of several named values.
template <typename T>
bool set_named(std::string_view value, std::initializer_list<std::pair<std::string_view, T>> names,
               std::optional<T>& field) {
  for (const auto& [name, v] : names)
    if (value == name) {
      field = v;
      return true;
    }
  return false;
}

// "RxC" among the allowed pairs.
bool set_pair(std::string_view value, std::initializer_list<std::pair<uint32_t, uint32_t>> allowed,
              std::optional<std::pair<uint32_t, uint32_t>>& field) {
  const size_t x = value.find('x');
  if (x == std::string_view::npos) return false;
  const std::optional<uint32_t> a = count_of(value.substr(0, x)), b = count_of(value.substr(x + 1));
  if (!a || !b || std::find(allowed.begin(), allowed.end(), std::pair{*a, *b}) == allowed.end()) return false;
  field = std::pair{*a, *b};
  return true;
}

using S = std::string_view;
using O = PlanOverrides;

// In the order `rill info --plan-keys` lists them: by op, then job.
constexpr KeyEntry kKeys[] = {
    {"linear_attention", "scan, serial or parallel",
     "causal linear attention's algorithm: the register scan (CPU drivers), the chunked kernel serial over "
     "chunks, or the chunked form parallel over chunks (GPUs)",
     true,
     [](S v, O& o) {
       using A = LinearAttentionAlgorithm;
       return set_named<A>(
           v, {{"scan", A::kRegisterScan}, {"serial", A::kChunkedSerial}, {"parallel", A::kChunkedParallel}},
           o.linear_attention);
     }},
    {"la_tile", "4, 8, 16 or 32", "the tile depth of the parallel linear-attention passes (8 where it fits)", true,
     [](S v, O& o) {
       return set_one_of(v, {4, 8, 16, 32}, o.la_tile);
     }},
    {"la_scan_groups", "a power of two from 1 to 64",
     "the runs of chunks the parallel state scan cuts a window into, scanned side by side (1: one serial walk)", true,
     [](S v, O& o) { return set_power_of_two(v, 1, 64, o.la_scan_groups); }},
    {"la_window", "a power of two from 16 to 4096",
     "the most chunks per window of the parallel form, whose chunk states are written, scanned and read back "
     "per window (a small one stays in a GPU's L2 cache)",
     true, [](S v, O& o) { return set_power_of_two(v, 16, 4096, o.la_window); }},
    {"la_span", "a power of two from 1 to 64",
     "chunks per span of the parallel form's states pass, the span's state in registers (1: each chunk's own "
     "state)",
     true, [](S v, O& o) { return set_power_of_two(v, 1, 64, o.la_span); }},
    {"la_chunk", "8, 16, 32 or 64",
     "at most this many positions per chunk of the parallel form (shorter chunks: fewer causal scores per "
     "position, more chunk states to write and scan; the same sums, grouped differently)",
     true,
     [](S v, O& o) {
       return set_one_of(v, {8, 16, 32, 64}, o.la_chunk);
     }},
    {"la_columns", "grouped or strided",
     "the parallel linear-attention output pass's 4 x 4 blocks over 4 neighbouring columns read as vectors, or "
     "4 strided ones",
     true, [](S v, O& o) { return set_either(v, "grouped", "strided", o.la_grouped_columns); }},
    {"la_scores", "fused or separate",
     "the parallel linear-attention output pass's causal scores computed in the same walk over the inner "
     "dimension as f(A) P (where a chunk's blocks fit one workgroup round; GPUs' default), or in a walk of their own",
     true, [](S v, O& o) { return set_either(v, "fused", "separate", o.la_fused_scores); }},
    {"la_rows", "paired or single",
     "the parallel linear-attention output pass's blocks: two 4-row blocks of a pair (i, last - i) times 2 columns, "
     "walking the causal product over the chunk's values resident in shared memory (every invocation's causal work "
     "alike, no barrier in the walk), or one 4-row block times 4 columns over barrier-paced tiles",
     true, [](S v, O& o) { return set_either(v, "paired", "single", o.la_paired_rows); }},
    {"block_tile", "4, 8, 16 or 32",
     "the tiled and flash GPU block-attention kernels' tile depth (refused where it does not fit)", true,
     [](S v, O& o) {
       return set_one_of(v, {4, 8, 16, 32}, o.block_tile);
     }},
    {"block_rounds", "fused or separate",
     "the tiled and flash GPU block-attention kernels walk a product's operand tiles once for all of its rounds of "
     "result blocks (heads past 64), or once per round; fused is the flash kernels' default, separate the tiled ones'",
     true, [](S v, O& o) { return set_either(v, "fused", "separate", o.block_fused_rounds); }},
    {"block_workgroup", "128 or 256",
     "the tiled and flash GPU block-attention kernels' invocations per workgroup (256 unless chosen; at most the "
     "device's limit)",
     true,
     [](S v, O& o) {
       return set_one_of(v, {128, 256}, o.block_workgroup);
     }},
    {"block_keys", "1, 2, 4, 8 or 16", "the CPU block-attention forward's keys per softmax step", true,
     [](S v, O& o) { return set_power_of_two(v, 1, 16, o.block_keys); }},
    {"block_texel", "on or off",
     "the CPU block-attention kernels read their rows as 4-element texels where the device backs them", true,
     [](S v, O& o) { return set_on_off(v, o.block_texel); }},
    {"block_dq", "rows or scores",
     "the CPU block-attention backward forms dq from the dS its key groups wrote (scores), or computes the "
     "scores again in query groups (rows)",
     true, [](S v, O& o) { return set_either(v, "scores", "rows", o.block_dq_from_scores); }},
    {"matmul_texel", "on or off",
     "the CPU matmul reads A and B (or packed weights' words) as texels where the shape allows", true,
     [](S v, O& o) { return set_on_off(v, o.matmul_texel); }},
    {"matmul_tile", "2x2, 4x4, 8x4, 4x8 or 8x8",
     "the GPU matmul's accumulators per invocation, rows x columns (workgroups of 16 x 16); a hint, not refused: "
     "kept only where 256 invocations and its shared tiles fit (else the 64 x 64 block), unused by the CPU family's "
     "register kernel",
     false,
     [](S v, O& o) {
       return set_pair(v, {{2, 2}, {4, 4}, {8, 4}, {4, 8}, {8, 8}}, o.matmul_tile);
     }},
    {"matmul_layout", "grouped or strided",
     "the GPU matmul's accumulators in runs of adjacent rows and columns read as vectors, or strided over the "
     "block",
     true, [](S v, O& o) { return set_either(v, "grouped", "strided", o.matmul_grouped); }},
    {"matmul_depth", "8, 16 or 32",
     "the GPU matmul's k steps per shared-memory slice; a hint like `matmul_tile` (32 drops to 16 where its tiles "
     "exceed shared memory)",
     true,
     [](S v, O& o) {
       return set_one_of(v, {8, 16, 32}, o.matmul_depth);
     }},
    {"matmul_buffers", "1 or 2",
     "the GPU matmul's shared stages (two: the next slice stored while the current one is read, one barrier per "
     "slice instead of two, twice the shared memory); a hint like `matmul_depth` (one where two do not fit)",
     true,
     [](S v, O& o) {
       return set_one_of(v, {1, 2}, o.matmul_buffers);
     }},
    {"matmul_splits", "1 to 64",
     "the GPU matmul's shares of K, summed in order by a second pass (unused by the CPU family's register kernel)",
     false, [](S v, O& o) { return set_range(v, 1, 64, o.matmul_splits); }},
    {"matmul_coop", "off, native or emulated",
     "f16 matmuls on cooperative matrices never, always (refused where the device has none), or with the "
     "fragments emulated (tests the kernel on any device)",
     true,
     [](S v, O& o) {
       using Coop = PlanOverrides::Coop;
       return set_named<Coop>(v, {{"off", Coop::kOff}, {"native", Coop::kNative}, {"emulated", Coop::kEmulated}},
                              o.matmul_coop);
     }},
    {"matmul_coop_buffers", "1 or 2",
     "the cooperative-matrix matmul's shared stages per k slice (two: one barrier per slice instead of two)", false,
     [](S v, O& o) {
       return set_one_of(v, {1, 2}, o.matmul_coop_buffers);
     }},
    {"matmul_coop_groups", "2x2, 2x4 or 4x2", "the cooperative-matrix matmul's subgroups along m x n", false,
     [](S v, O& o) {
       return set_pair(v, {{2, 2}, {2, 4}, {4, 2}}, o.matmul_coop_groups);
     }},
    {"matmul_coop_depth", "32 or 64",
     "the cooperative-matrix matmul's k steps per shared slice (64: half the barriers, twice the shared memory)", false,
     [](S v, O& o) {
       return set_one_of(v, {32, 64}, o.matmul_coop_depth);
     }},
    {"rmsnorm_texel", "on or off", "the CPU RMSNorm kernels read their rows as texels where rows are whole texels",
     true, [](S v, O& o) { return set_on_off(v, o.rmsnorm_texel); }},
    {"elementwise_texel", "on or off",
     "the CPU elementwise kernels take 4 elements per invocation, read as texels, where the count allows", true,
     [](S v, O& o) { return set_on_off(v, o.elementwise_texel); }},
    {"icl_layers", "per-task or per-workgroup",
     "the ICL layer kernels: a task per invocation in registers, or a workgroup per few tasks in shared memory", true,
     [](S v, O& o) { return set_either(v, "per-workgroup", "per-task", o.icl_workgroup_per_task); }},
    {"icl_tasks_per_workgroup", "a power of two from 1 to 64", "the ICL workgroup kernels' tasks per workgroup", true,
     [](S v, O& o) { return set_power_of_two(v, 1, 64, o.icl_tasks_per_workgroup); }},
    {"icl_block", "1, 2, 3 or 4",
     "the ICL workgroup kernels' products in blocks of N x N outputs per invocation (each shared-memory load then "
     "serves N multiply-adds; 1: an output each)",
     true,
     [](S v, O& o) {
       return set_one_of(v, {1, 2, 3, 4}, o.icl_block);
     }},
    {"icl_layers_per_dispatch", "a count from 1 to 1024",
     "ICL layers per dispatch (still bounded by the driver's loop limit)", true,
     [](S v, O& o) { return set_range(v, 1, 1024, o.icl_layers_per_dispatch); }},
    {"icl_top_layer", "query or full",
     "the ICL top layer computes only what the loss reads (query), or the whole layer (full)", true,
     [](S v, O& o) { return set_either(v, "query", "full", o.icl_query_top_layer); }},
    {"icl_texel", "on or off",
     "the per-task ICL layers and the gradient reduction read their arrays as texels on CPU drivers", true,
     [](S v, O& o) { return set_on_off(v, o.icl_texel); }},
    {"lm_decode", "fused or per-op",
     "TransNormer decoding as fused kernels (a mixer and an FFN dispatch per layer), or a dispatch per op", true,
     [](S v, O& o) { return set_either(v, "fused", "per-op", o.lm_decode_fused); }},
    {"lm_decode_grid",
     "WORKGROUPxCOLUMNS, a power of two from 32 to 1024 and a multiple of 4 from 4 to 256 (e.g. 256x16)",
     "GPU decoding's workgroup size and FFN / logit columns per workgroup", true,
     [](S v, O& o) {
       const size_t x = v.find('x');
       if (x == std::string_view::npos) return false;
       const std::optional<uint32_t> wg = count_of(v.substr(0, x)), cols = count_of(v.substr(x + 1));
       if (!wg || *wg < 32 || *wg > 1024 || (*wg & (*wg - 1)) != 0) return false;
       if (!cols || *cols < 4 || *cols > 256 || *cols % 4 != 0) return false;
       o.lm_decode_grid = std::pair{*wg, *cols};
       return true;
     }},
    {"lm_decode_columns", "1, 4, 8 or 16",
     "adjacent columns per invocation in the fused decoding products (refused where the model's widths do not "
     "divide into them)",
     true,
     [](S v, O& o) {
       return set_one_of(v, {1, 4, 8, 16}, o.lm_decode_columns);
     }},
    {"wait_spin_us", "off or 1 to 10000",
     "microseconds the host polls a submission's fence before it sleeps on it (off: it sleeps at once)", false,
     [](S v, O& o) {
       if (v != "off") return set_range(v, 1, 10000, o.wait_spin_us);
       o.wait_spin_us = 0;
       return true;
     }},
    {"lm_decode_rows", "1, 2, 4 or 8", "rows whose weight loads the fused decoding products issue together", true,
     [](S v, O& o) {
       return set_one_of(v, {1, 2, 4, 8}, o.lm_decode_rows);
     }},
    {"lm_decode_weights", "texel or buffer",
     "the fused decoding kernels read dense f32 weights and packed words (and int8's scales) as texels, or from "
     "storage buffers",
     true, [](S v, O& o) { return set_either(v, "texel", "buffer", o.lm_decode_texel); }},
    {"lm_decode_shuffle", "on or off",
     "CPU drivers' texel decoding takes its input rows by subgroup shuffles where the products allow, or from "
     "shared memory",
     true, [](S v, O& o) { return set_on_off(v, o.lm_decode_shuffle); }},
};

const KeyEntry* find_key(std::string_view key) {
  for (const KeyEntry& k : kKeys)
    if (k.key == key) return &k;
  return nullptr;
}

std::string known_keys() {
  std::vector<std::string_view> names;
  for (const KeyEntry& k : kKeys) names.push_back(k.key);
  std::sort(names.begin(), names.end());
  std::string text;
  for (std::string_view n : names) text += (text.empty() ? "" : ", ") + std::string(n);
  return text;
}

}  // namespace

Result<PlanOverrides> parse_overrides(std::string_view text, PlanOverrides base) {
  PlanOverrides out = std::move(base);
  std::vector<std::string_view> seen;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    const KeyEntry* entry = find_key(key);
    if (!entry)
      return invalid_argument("kernel plan: unknown key '" + std::string(key) + "' (known: " + known_keys() + ")");
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return invalid_argument("kernel plan: " + std::string(key) + " is given twice");
    seen.push_back(key);
    if (!entry->set(value, out))
      return invalid_argument("kernel plan: " + std::string(key) + " is '" + std::string(value) + "'; use " +
                              std::string(entry->values));
  }
  return out;
}

bool tunable_key(std::string_view key) {
  const KeyEntry* entry = find_key(key);
  return entry && entry->tunable;
}

}  // namespace rill::ops::plan

namespace rill {

std::vector<KernelPlanKey> kernel_plan_keys() {
  std::vector<KernelPlanKey> keys;
  for (const auto& k : ops::plan::kKeys)
    keys.push_back({std::string(k.key), std::string(k.values), std::string(k.chooses), k.tunable});
  return keys;
}

}  // namespace rill
