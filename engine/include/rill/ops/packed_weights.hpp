// Weight matrices in compact forms, for the B operand of matmul (the linear layers of a model):
//  - kF16: IEEE half precision, two per 32-bit word (round to nearest even); read as f32, so it
//    needs no 16-bit storage on the device. Half the bytes of f32.
//  - kInt8: symmetric 8-bit, four per word, with one f32 scale per column and group of `group`
//    consecutive rows (the reduction dimension): value = q * scale, q in [-127, 127], scale = the
//    group's largest |w| / 127. A quarter of the bytes of f32, plus 4 / group bytes per weight.
//  - kInt4: the same with 4 bits, eight per word: q in [-7, 7], scale = the group's largest |w| / 7.
//    An eighth of the bytes of f32, plus 4 / group bytes per weight (groups of 32: 0.625 bytes).
// Matrices are packed along their columns: word (b, r, j) holds columns 8j..8j+7 (int4), 4j..4j+3
// (int8) or 2j..2j+1 (f16) of row r, low bits first, a ragged last word padded with zeros.
// Arithmetic stays f32.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/export.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill {
class Context;
}

namespace rill::ops {

enum class WeightFormat { kF16, kInt8, kInt4 };
// Whether the format keeps group scales (int8, int4).
inline bool has_scales(WeightFormat f) { return f != WeightFormat::kF16; }
RILL_API const char* weight_format_name(WeightFormat format);

// A packed [batch, rows, cols] matrix on the host.
struct RILL_API HostPackedWeights {
  WeightFormat format = WeightFormat::kInt8;
  int64_t batch = 1, rows = 0, cols = 0;
  uint32_t group = 0;           // rows per scale (kInt8, kInt4)
  std::vector<uint32_t> words;  // [batch, rows, words_per_row()]
  std::vector<float> scales;    // kInt8, kInt4: [batch, groups(), cols]; empty for kF16

  uint32_t words_per_row() const;
  uint32_t groups() const;                             // scale rows per matrix (kInt8, kInt4)
  float value(int64_t b, int64_t r, int64_t c) const;  // the element the device reads
};

// Packs `values` of `shape` ([rows, cols] or [batch, rows, cols], row-major). Groups of int8 scales
// span `group` rows (clamped to the rows; 0 means all rows: one scale per column). Non-finite
// values (and, for f16, values past its range) are refused, naming the first.
RILL_API Result<HostPackedWeights> pack_weights(std::span<const float> values, const std::vector<int64_t>& shape,
                                                WeightFormat format, uint32_t group = 64);

// A packed matrix on the device: words u32 [batch, rows, words per row], scales f32 (kInt8, kInt4).
struct RILL_API PackedWeights {
  WeightFormat format = WeightFormat::kInt8;
  int64_t batch = 1, rows = 0, cols = 0;
  uint32_t group = 0;
  Tensor words, scales;

  bool valid() const { return words.valid(); }
  // InvalidArgument unless the words (u32) and scales (f32, int8 and int4 only) have the shapes this
  // matrix needs: a hand-assembled PackedWeights must not let a kernel read past its buffers.
  Status check(const char* op) const;
  uint64_t size_bytes() const { return words.size_bytes() + scales.size_bytes(); }
  std::string describe() const;  // "int8 [8, 1024, 128] (group 64)"
};

RILL_API Result<PackedWeights> upload_packed(Context& ctx, const HostPackedWeights& host, const std::string& name,
                                             MemoryPool pool = MemoryPool::kWeights);

// Columns [first, first + count) of one packed matrix (batch 1) as a matrix of their own, with the
// same words and scales (nothing rounded again). first must start a word: a multiple of 8 (int4),
// 4 (int8) or 2 (f16).
RILL_API Result<HostPackedWeights> packed_columns(const HostPackedWeights& host, int64_t first, int64_t count);

// One packed [rows, cols] matrix kept as blocks of its columns, each a PackedWeights that fits one
// storage binding: a table too large for one (a 2,048-wide model's 64,000-token vocabulary in f16
// is 262 MB; many phones and lavapipe bind 128 MiB at once). One block, the whole matrix, where it
// fits. Block i holds columns [first[i], first[i] + blocks[i].cols).
struct RILL_API PackedColumnBlocks {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> first;
  std::vector<PackedWeights> blocks;

  bool valid() const { return !blocks.empty(); }
  uint64_t size_bytes() const;
};

// Uploads one packed matrix in column blocks whose words and scales each take at most max_bytes
// (0: the device's maxStorageBufferRange), every block but the first starting at a multiple of
// column_align columns (rounded up to whole words; a caller that views each block's share of an
// output row asks for its 256-byte alignment). OutOfRange when one aligned run of columns alone
// is larger than max_bytes.
RILL_API Result<PackedColumnBlocks> upload_packed_columns(Context& ctx, const HostPackedWeights& host,
                                                          const std::string& name, uint64_t max_bytes = 0,
                                                          int64_t column_align = 1,
                                                          MemoryPool pool = MemoryPool::kWeights);

}  // namespace rill::ops
