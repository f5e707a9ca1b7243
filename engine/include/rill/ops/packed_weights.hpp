// Weight matrices in compact forms, for the B operand of matmul (the linear layers of a model):
//  - kF16: IEEE half precision, two per 32-bit word (round to nearest even); read as f32, so it
//    needs no 16-bit storage on the device. Half the bytes of f32.
//  - kInt8: symmetric 8-bit, four per word, with one f32 scale per column and group of `group`
//    consecutive rows (the reduction dimension): value = q * scale, q in [-127, 127], scale = the
//    group's largest |w| / 127. A quarter of the bytes of f32, plus 4 / group bytes per weight.
// Matrices are packed along their columns: word (b, r, j) holds columns 4j..4j+3 (int8) or 2j..2j+1
// (f16) of row r, low bits first, a ragged last word padded with zeros. Arithmetic stays f32.
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

enum class WeightFormat { kF16, kInt8 };
RILL_API const char* weight_format_name(WeightFormat format);

// A packed [batch, rows, cols] matrix on the host.
struct RILL_API HostPackedWeights {
  WeightFormat format = WeightFormat::kInt8;
  int64_t batch = 1, rows = 0, cols = 0;
  uint32_t group = 0;           // rows per scale (kInt8)
  std::vector<uint32_t> words;  // [batch, rows, words_per_row()]
  std::vector<float> scales;    // kInt8: [batch, groups(), cols]; empty for kF16

  uint32_t words_per_row() const;
  uint32_t groups() const;                             // scale rows per matrix (kInt8)
  float value(int64_t b, int64_t r, int64_t c) const;  // the element the device reads
};

// Packs `values` of `shape` ([rows, cols] or [batch, rows, cols], row-major). Groups of int8 scales
// span `group` rows (clamped to the rows; 0 means all rows: one scale per column). Non-finite
// values (and, for f16, values past its range) are refused, naming the first.
RILL_API Result<HostPackedWeights> pack_weights(std::span<const float> values, const std::vector<int64_t>& shape,
                                                WeightFormat format, uint32_t group = 64);

// A packed matrix on the device: words u32 [batch, rows, words per row], scales f32 (kInt8).
struct RILL_API PackedWeights {
  WeightFormat format = WeightFormat::kInt8;
  int64_t batch = 1, rows = 0, cols = 0;
  uint32_t group = 0;
  Tensor words, scales;

  bool valid() const { return words.valid(); }
  // InvalidArgument unless the words (u32) and scales (f32, int8 only) have the shapes this
  // matrix needs: a hand-assembled PackedWeights must not let a kernel read past its buffers.
  Status check(const char* op) const;
  uint64_t size_bytes() const { return words.size_bytes() + scales.size_bytes(); }
  std::string describe() const;  // "int8 [8, 1024, 128] (group 64)"
};

RILL_API Result<PackedWeights> upload_packed(Context& ctx, const HostPackedWeights& host, const std::string& name,
                                             MemoryPool pool = MemoryPool::kWeights);

}  // namespace rill::ops
