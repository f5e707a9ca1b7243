// Packing weight matrices on the host (f16 pairs, int8 quartets with group scales) and uploading
// them; the layout is described in rill/ops/packed_weights.hpp and read by matmul_common.glsl.
#include "rill/ops/packed_weights.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <numeric>

#include "core/host_memory_guard.hpp"
#include "ops/op_common.hpp"
#include "rill/context.hpp"
#include "rill/half.hpp"

namespace rill::ops {
namespace {

// The largest |q| of a quantized format: its scale maps the group's largest |w| there.
int32_t q_max(WeightFormat f) { return f == WeightFormat::kInt4 ? 7 : 127; }
// The bits of one stored value.
uint32_t value_mask(WeightFormat f) {
  return f == WeightFormat::kInt4 ? 0xFu : f == WeightFormat::kInt8 ? 0xFFu : 0xFFFFu;
}
// Where column c's value starts in its word.
uint32_t bit_shift(WeightFormat f, int64_t c) {
  return 32 / detail::packed_per_word(f) * uint32_t(c % detail::packed_per_word(f));
}

// Symmetric int8 or int4 of one group: the largest magnitude maps to q_max. The scale is rounded to
// f32 first and q computed against that f32 scale, so q * scale is the closest the stored scale allows.
float group_scale(double max_abs, int32_t qmax) { return float(max_abs / double(qmax)); }

int32_t quantize(float w, float scale, int32_t qmax) {
  if (scale == 0.0f) return 0;
  return int32_t(std::clamp(std::nearbyint(double(w) / double(scale)), double(-qmax), double(qmax)));
}

}  // namespace

const char* weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::kInt8:
      return "int8";
    case WeightFormat::kInt4:
      return "int4";
    case WeightFormat::kF16:
      break;
  }
  return "f16";
}

uint32_t HostPackedWeights::words_per_row() const {
  return uint32_t((cols + detail::packed_per_word(format) - 1) / detail::packed_per_word(format));
}

uint32_t HostPackedWeights::groups() const {
  return has_scales(format) && group > 0 ? uint32_t((rows + group - 1) / group) : 0;
}

namespace {
// The shapes a packed matrix may have (int64 products of them do not overflow).
Status check_shape(const HostPackedWeights& h, const std::string& where) {
  if (h.batch < 1 || h.rows < 1 || h.cols < 1 || h.batch > INT32_MAX || h.rows > INT32_MAX || h.cols > INT32_MAX ||
      h.batch * h.rows > INT32_MAX || h.batch * h.rows * h.cols > INT32_MAX)
    return invalid_argument(where + ": every dimension must be at least 1 and the matrix below 2^31 elements");
  return Status::ok();
}

// A host matrix built by hand, checked as pack_weights builds one: its shape, its group and the
// words (and scales) the shape needs.
Status check_host(const HostPackedWeights& h, const std::string& where) {
  RILL_RETURN_IF_ERROR(check_shape(h, where));
  if (has_scales(h.format) && h.group < 1)
    return invalid_argument(where + ": " + std::string(weight_format_name(h.format)) +
                            " weights need a group of at least 1 row per scale");
  if (h.words.size() != uint64_t(h.batch * h.rows) * h.words_per_row() ||
      h.scales.size() != uint64_t(h.batch) * h.groups() * uint64_t(h.cols))
    return invalid_argument(where + ": words or scales do not match the shape");
  return Status::ok();
}
}  // namespace

float HostPackedWeights::value(int64_t b, int64_t r, int64_t c) const {
  const uint32_t word = words[size_t((b * rows + r) * words_per_row() + c / detail::packed_per_word(format))];
  if (format == WeightFormat::kF16) return half_to_float(uint16_t(word >> bit_shift(format, c)));
  const uint32_t bits = 32 / detail::packed_per_word(format);  // sign-extend the value's bits
  const int32_t q = int32_t((word >> bit_shift(format, c)) << (32 - bits)) >> (32 - bits);
  return float(q) * scales[size_t((b * groups() + r / group) * cols + c)];
}

Result<HostPackedWeights> pack_weights(std::span<const float> values, const std::vector<int64_t>& shape,
                                       WeightFormat format, uint32_t group) {
  if (shape.size() != 2 && shape.size() != 3)
    return invalid_argument("pack_weights: shape needs 2 or 3 dimensions ([rows, cols] or [batch, rows, cols])");
  HostPackedWeights p;
  p.format = format;
  p.batch = shape.size() == 3 ? shape[0] : 1;
  p.rows = shape[shape.size() - 2];
  p.cols = shape.back();
  RILL_RETURN_IF_ERROR(check_shape(p, "pack_weights"));
  if (values.size() != size_t(p.batch * p.rows * p.cols))
    return invalid_argument("pack_weights: " + std::to_string(values.size()) + " values for a shape of " +
                            std::to_string(p.batch * p.rows * p.cols));
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return invalid_argument("pack_weights: value " + std::to_string(i) + " is not finite");
  p.group = has_scales(format) ? uint32_t(group == 0 ? p.rows : std::min<int64_t>(group, p.rows)) : 0;
  const uint32_t wpr = p.words_per_row();
  try {
    p.words.assign(size_t(p.batch * p.rows) * wpr, 0u);
    if (has_scales(format)) p.scales.assign(size_t(p.batch) * p.groups() * size_t(p.cols), 0.0f);
  } catch (const std::bad_alloc&) {
    return rill::detail::out_of_host_memory("pack_weights");
  }
  auto at = [&](int64_t b, int64_t r, int64_t c) { return values[size_t((b * p.rows + r) * p.cols + c)]; };
  for (int64_t b = 0; b < p.batch; ++b) {
    if (has_scales(format))
      for (uint32_t g = 0; g < p.groups(); ++g) {
        const int64_t r0 = int64_t(g) * p.group, r1 = std::min<int64_t>(r0 + p.group, p.rows);
        for (int64_t c = 0; c < p.cols; ++c) {
          double max_abs = 0.0;
          for (int64_t r = r0; r < r1; ++r) max_abs = std::max(max_abs, std::fabs(double(at(b, r, c))));
          p.scales[size_t((b * p.groups() + g) * p.cols + c)] = group_scale(max_abs, q_max(format));
        }
      }
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.cols; ++c) {
        uint32_t bits;
        if (format == WeightFormat::kF16) {
          bits = float_to_half(at(b, r, c));
          if ((bits & 0x7fffu) == 0x7c00u)  // rounds to infinity
            return out_of_range("pack_weights: value " + std::to_string((b * p.rows + r) * p.cols + c) + " (" +
                                std::to_string(at(b, r, c)) + ") is beyond the f16 range");
        } else {
          const float scale = p.scales[size_t((b * p.groups() + r / p.group) * p.cols + c)];
          bits = uint32_t(quantize(at(b, r, c), scale, q_max(format))) & value_mask(format);
        }
        p.words[size_t((b * p.rows + r) * wpr + c / detail::packed_per_word(format))] |= bits << bit_shift(format, c);
      }
  }
  return p;
}

Status PackedWeights::check(const char* op) const {
  const int64_t per = detail::packed_per_word(format);
  const bool scaled = has_scales(format);
  const bool words_fit = words.valid() && words.dtype() == DType::kU32 &&
                         words.shape() == std::vector<int64_t>{batch, rows, (cols + per - 1) / per};
  const bool scales_fit = !scaled || (group > 0 && scales.valid() && scales.dtype() == DType::kF32 &&
                                      scales.shape() == std::vector<int64_t>{batch, (rows + group - 1) / group, cols});
  if (batch < 1 || rows < 1 || cols < 1 || !words_fit || !scales_fit)
    return invalid_argument(std::string(op) + ": packed weights " + describe() +
                            " do not hold the words (and scales) their shape needs");
  return Status::ok();
}

std::string PackedWeights::describe() const {
  std::string s = std::string(weight_format_name(format)) + " [" + std::to_string(batch) + ", " + std::to_string(rows) +
                  ", " + std::to_string(cols) + "]";
  if (has_scales(format)) s += " (group " + std::to_string(group) + ")";
  return s;
}

Result<PackedWeights> upload_packed(Context& ctx, const HostPackedWeights& host, const std::string& name,
                                    MemoryPool pool) {
  RILL_RETURN_IF_ERROR(check_host(host, "upload_packed: '" + name + "'"));
  PackedWeights p;
  p.format = host.format;
  p.batch = host.batch, p.rows = host.rows, p.cols = host.cols, p.group = host.group;
  RILL_ASSIGN_OR_RETURN(p.words,
                        ctx.tensor(DType::kU32, {host.batch, host.rows, int64_t(host.words_per_row())}, name, pool));
  RILL_RETURN_IF_ERROR(ctx.upload(
      p.words, std::span(reinterpret_cast<const uint8_t*>(host.words.data()), host.words.size() * sizeof(uint32_t))));
  if (has_scales(host.format)) {
    RILL_ASSIGN_OR_RETURN(
        p.scales, ctx.tensor(DType::kF32, {host.batch, int64_t(host.groups()), host.cols}, name + ".scales", pool));
    RILL_RETURN_IF_ERROR(ctx.upload_floats(p.scales, host.scales));
  }
  return p;
}

Result<HostPackedWeights> packed_columns(const HostPackedWeights& host, int64_t first, int64_t count) {
  const uint32_t per = detail::packed_per_word(host.format);
  RILL_RETURN_IF_ERROR(check_host(host, "packed_columns"));
  if (host.batch != 1) return invalid_argument("packed_columns: the packed matrix must be one [rows, cols] matrix");
  if (first < 0 || count < 1 || first > host.cols || count > host.cols - first || first % per != 0)
    return invalid_argument("packed_columns: columns [" + std::to_string(first) + ", " + std::to_string(first + count) +
                            ") of " + std::to_string(host.cols) + " must be inside the matrix and start a word of " +
                            std::to_string(per));
  HostPackedWeights p;
  p.format = host.format;
  p.rows = host.rows, p.cols = count, p.group = host.group;
  const uint32_t wpr = p.words_per_row(), host_wpr = host.words_per_row();
  const int64_t word0 = first / per;
  try {
    p.words.resize(size_t(p.rows) * wpr);
    if (has_scales(host.format)) p.scales.resize(size_t(p.groups()) * size_t(count));
  } catch (const std::bad_alloc&) {
    return rill::detail::out_of_host_memory("packed_columns");
  }
  for (int64_t r = 0; r < p.rows; ++r) {
    std::copy_n(host.words.begin() + r * host_wpr + word0, wpr, p.words.begin() + r * wpr);
    // A block ending inside a word takes that word's other columns too: zero them, as packing pads.
    if (const uint32_t tail = uint32_t(count % per); tail != 0)
      p.words[size_t(r * wpr + wpr - 1)] &= ~(~0u << (32 / per * tail));
  }
  for (uint32_t g = 0; g < p.groups(); ++g)
    std::copy_n(host.scales.begin() + int64_t(g) * host.cols + first, count, p.scales.begin() + int64_t(g) * count);
  return p;
}

uint64_t PackedColumnBlocks::size_bytes() const {
  uint64_t bytes = 0;
  for (const PackedWeights& b : blocks) bytes += b.size_bytes();
  return bytes;
}

Result<PackedColumnBlocks> upload_packed_columns(Context& ctx, const HostPackedWeights& host, const std::string& name,
                                                 uint64_t max_bytes, int64_t column_align, MemoryPool pool) {
  RILL_RETURN_IF_ERROR(check_host(host, "upload_packed_columns: '" + name + "'"));
  if (host.batch != 1) return invalid_argument("upload_packed_columns: '" + name + "' must be one [rows, cols] matrix");
  if (column_align < 1) return invalid_argument("upload_packed_columns: column_align must be at least 1");
  if (max_bytes == 0) max_bytes = ctx.device().caps.max_storage_buffer_range;
  const uint32_t per = detail::packed_per_word(host.format);
  const int64_t align = std::lcm(column_align, int64_t(per));
  // The larger binding of a block of `count` columns: its words (each row's columns in whole
  // words), or, for groups of very few rows, its scales.
  auto block_bytes = [&](uint64_t count) {
    const uint64_t words = uint64_t(host.rows) * ((count + per - 1) / per) * 4;
    return std::max<uint64_t>(words, has_scales(host.format) ? uint64_t(host.groups()) * count * 4 : 0);
  };
  PackedColumnBlocks out;
  out.rows = host.rows, out.cols = host.cols;
  if (max_bytes == 0 || block_bytes(uint64_t(host.cols)) <= max_bytes) {
    RILL_ASSIGN_OR_RETURN(PackedWeights whole, upload_packed(ctx, host, name, pool));
    out.first.push_back(0);
    out.blocks.push_back(std::move(whole));
    return out;
  }
  // Blocks of a multiple of `align` columns (whole words): their bytes grow in proportion.
  const int64_t per_block = int64_t(max_bytes / block_bytes(uint64_t(align))) * align;
  if (per_block == 0)
    return out_of_range("upload_packed_columns: '" + name + "': " + std::to_string(align) + " columns of " +
                        std::to_string(host.rows) + " rows take more than " + std::to_string(max_bytes) + " bytes");
  for (int64_t first = 0; first < host.cols; first += per_block) {
    const int64_t count = std::min(per_block, host.cols - first);
    RILL_ASSIGN_OR_RETURN(HostPackedWeights part, packed_columns(host, first, count));
    RILL_ASSIGN_OR_RETURN(
        PackedWeights block,
        upload_packed(ctx, part, name + "[" + std::to_string(first) + ":" + std::to_string(first + count) + "]", pool));
    out.first.push_back(first);
    out.blocks.push_back(std::move(block));
  }
  return out;
}

}  // namespace rill::ops
