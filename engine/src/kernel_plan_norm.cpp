// Kernel plans of the row reductions (RMSNorm forward and backward) and of the elementwise kernels
// (kernel_plan.hpp).
#include <algorithm>

#include "kernel_plan.hpp"
#include "kernel_plan_util.hpp"

namespace rill::ops::plan {

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

// GPUs: the register kernels for rows of up to 32 elements per lane (8 vectors of 4 per array, as
// 1024 with 32-lane subgroups; a 16-lane Mali's rows up to 512) and at most 1024, where every
// subgroup has the planned lanes. The generic kernel's two passes over a short row are each a wait on
// memory (16384 x 256 f32 ran at 59% of copy forward, 36% backward on an H200, the backward's dgain
// reading x and dy a second time).
bool gpu_register_rows(const DeviceTraits& d, uint32_t dim) {
  return d.family == Family::kGpu && d.subgroup_arithmetic && d.fixed_subgroup && d.subgroup >= 4 &&
         d.subgroup <= d.max_invocations && dim <= std::min(1024u, 32u * d.subgroup);
}

// GPUs, few long rows: the generic kernel's workgroup widened from 256 up to 1024 invocations
// while the whole grid stays within what a big GPU holds at once (about 128K invocations) and each
// invocation keeps two or more loads per pass. On an H200, 64 x 8192 f32 ran 64 workgroups of 256,
// each invocation walking 8 vectors per pass: forward 7.0 us, the backward's dx 6.9 us.
uint32_t generic_row_workgroup(const DeviceTraits& d, uint32_t dim, uint32_t vector_width, uint32_t rows) {
  uint32_t wg = reduction_workgroup(d, dim);
  if (d.family != Family::kGpu || rows == 0) return wg;
  const uint64_t loads = dim / vector_width;
  while (wg < 1024 && wg * 2 <= d.max_invocations && uint64_t(rows) * wg * 2 <= (128u << 10) && loads >= 2ull * wg * 2)
    wg *= 2;
  return wg;
}

}  // namespace

// On lavapipe a texel fetch gathers every lane's four elements at once, where a storage-buffer
// load is a loop over the lanes: forward 1.2-2.3x at the benchmarked shapes.
bool rmsnorm_texel_rows(const DeviceTraits& d, uint32_t dim, uint32_t rows, bool f16, uint32_t bindings) {
  return chosen(d).rmsnorm_texel.value_or(true) && d.family == Family::kCpu && d.subgroup_arithmetic && dim % 4 == 0 &&
         rows > 0 && texel_views_fit(d, f16, uint64_t(rows) * dim / 4, bindings);
}

bool elementwise_texels(const DeviceTraits& d, uint64_t n, bool f16, uint32_t inputs) {
  return chosen(d).elementwise_texel.value_or(true) && d.family == Family::kCpu && n > 0 && n % 4 == 0 &&
         texel_views_fit(d, f16, n / 4, inputs);
}

RmsnormPlan rmsnorm_forward(const DeviceTraits& d, uint32_t dim, uint32_t rows, bool f16, bool residual) {
  RmsnormPlan p;
  p.vector_width = row_vector_width({dim});  // every kernel has a `_vec4` variant
  p.texel_rows = rmsnorm_texel_rows(d, dim, rows, f16, residual ? 3 : 2);
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
  p.workgroup = generic_row_workgroup(d, dim, p.vector_width, rows);
  return p;
}

std::optional<RmsnormBackwardPlan> rmsnorm_backward(const DeviceTraits& d, uint32_t rows, uint32_t dim, bool f16) {
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
  return RmsnormBackwardPlan{d.subgroup,
                             uint32_t(per),
                             uint32_t(ceil_div(std::max<uint32_t>(rows, 1), per)),
                             forward.vector_width,
                             1,
                             rmsnorm_texel_rows(d, dim, rows, f16, 3)};
}

Result<RmsnormGainPlan> rmsnorm_backward_gain(const DeviceTraits& d, uint32_t rows, uint32_t columns) {
  // GPUs want many workgroups (blocks of 128 rows, down to 8 until there are about 256 workgroups:
  // 64 x 8192 on an H200 ran as 32 workgroups, each invocation walking all 64 rows, 9.2 us); a CPU
  // driver wants a few long ones per core.
  uint64_t per = d.family == Family::kCpu ? 1024 : 128;
  if (d.family == Family::kGpu) {
    const uint64_t groups_x = ceil_div(std::max<uint32_t>(columns, 1), 64);
    while (per > 8 && groups_x * ceil_div(std::max<uint32_t>(rows, 1), per) < 256) per /= 2;
  }
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

}  // namespace rill::ops::plan
