// Safetensors reader and writer for checkpoints and model weights. Files are untrusted input: the
// reader validates the whole header (types, sizes, offsets, tiling of the data region) before it
// hands out a single byte, and reports every problem as a Status naming the file and the tensor.
//
// Layout: u64 little-endian header length N, N bytes of UTF-8 JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the data region. Offsets are relative to the data region; the tensors cover it exactly.
//
//   auto file = rill::SafetensorsFile::open("model.safetensors").value();
//   auto wq = file.read_floats("layers.0.q", std::vector<int64_t>{512, 512});
//
//   rill::SafetensorsWriter w;
//   RILL_RETURN_IF_ERROR(w.add_floats("step.loss", {1}, loss));
//   RILL_RETURN_IF_ERROR(w.write("ckpt.safetensors"));
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/export.hpp"
#include "rill/status.hpp"

namespace rill {

// Element types of the safetensors format; the file spells them "F32", "F16", "BF16", ...
// Other dtypes of the format (U64, F8_*, complex) are rejected as unknown.
enum class TensorDType { kF32, kF16, kBF16, kF64, kI64, kI32, kU32, kI16, kU16, kI8, kU8, kBool };

RILL_API size_t dtype_size(TensorDType dtype);
RILL_API std::string_view dtype_name(TensorDType dtype);  // "F32", "BF16", "BOOL", ...
// The dtype a file spells `name`; nullopt when it is not one of TensorDType (case-sensitive).
RILL_API std::optional<TensorDType> dtype_from_name(std::string_view name);

// One tensor of a file. `offset` is from the start of the file, not of the data region.
struct RILL_API SafetensorsEntry {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<int64_t> shape;  // [] is a scalar with one element
  uint64_t offset = 0;
  uint64_t bytes = 0;

  // Product of the shape (1 for a scalar); -1 when a dimension is negative or the product does not
  // fit int64_t, which never happens for entries of a SafetensorsFile.
  int64_t elements() const;
};

// Caps applied before anything is allocated from header values; exceeding one is OutOfRange.
struct SafetensorsLimits {
  uint64_t max_header_bytes = 100ull << 20;
  uint64_t max_file_bytes = 1ull << 40;
  size_t max_tensors = 1 << 20;
  size_t max_rank = 8;
  size_t max_name_bytes = 4096;  // of one tensor name
};

// A validated, read-only safetensors file. open() reads a file of up to 64 MiB into memory and maps
// a bigger one with mmap (zero-copy); from_bytes() owns an in-memory copy. Move-only; a moved-from object may only be
// destroyed or assigned to.
//
// Errors: DataLoss for a corrupt or truncated file, OutOfRange for a limit exceeded, NotFound for
// a missing file or tensor, InvalidArgument when a tensor is not what the caller expects.
//
// Stricter than the format's reference reader: duplicate JSON keys (two tensors with one name, or
// a field given twice), unknown fields in a tensor entry, NUL bytes in the header and nesting
// deeper than a header needs are all DataLoss. Parsing holds the JSON tree of the header, which
// can take several times max_header_bytes of memory; lower the limit for small trusted inputs.
// A mapped file (over 64 MiB) that another process truncates while it is open makes later reads
// fault (SIGBUS), and bytes rewritten in place are read as they now are; load through from_bytes()
// when such a file may change underneath. Files rill writes are replaced by a rename, which
// leaves an open one as it was.
class RILL_API SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path, const SafetensorsLimits& limits = {});
  static Result<SafetensorsFile> from_bytes(std::vector<uint8_t> bytes, const SafetensorsLimits& limits = {});
  // The same with the name its errors give the bytes (the path they were read from; "<memory>" above).
  static Result<SafetensorsFile> from_bytes(std::vector<uint8_t> bytes, std::string label,
                                            const SafetensorsLimits& limits = {});

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  // All tensors in file order (sorted by offset; zero-size tensors before others at one offset).
  const std::vector<SafetensorsEntry>& entries() const;
  // The tensor called `name`, or nullptr.
  const SafetensorsEntry* find(std::string_view name) const;
  // Zero-copy view of a tensor's bytes, valid while this object lives. Not aligned beyond 1 byte:
  // copy out (memcpy) rather than casting. Empty for an entry that is not from this file.
  std::span<const uint8_t> bytes(const SafetensorsEntry& entry) const;

  // The bytes of `name` after checking it has `dtype` and `shape`: NotFound when it is missing,
  // InvalidArgument naming the tensor when the dtype or shape differ.
  Result<std::span<const uint8_t>> tensor(std::string_view name, TensorDType dtype,
                                          std::span<const int64_t> shape) const;
  // `name` converted to float from F32, F16, BF16 or F64 (F64 rounds to nearest); InvalidArgument
  // for other dtypes or a shape other than `expected_shape`.
  Result<std::vector<float>> read_floats(std::string_view name, std::span<const int64_t> expected_shape) const;
  // DataLoss naming the tensor and the first flat index when a float tensor (F32, F16, BF16, F64)
  // holds a NaN or an infinity; OK for every other dtype. Loaders of weights and states call it:
  // a non-finite value would otherwise spread silently through every result.
  Status check_finite(const SafetensorsEntry& entry) const;

  // The "__metadata__" object (string keys and values only); empty when the file has none.
  const std::map<std::string, std::string>& metadata() const;
  // The path given to open(), or "<memory>"; used in error messages.
  const std::string& label() const;

 private:
  struct Impl;
  explicit SafetensorsFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Builds a safetensors file in memory. Tensors are laid out in the order they are added, back to
// back (the format allows no gaps); the header is padded with spaces so that the data region
// starts 8-byte aligned. add() copies the bytes, so the caller's buffers may go away; serialize()
// and write() build the whole file in memory once more.
class RILL_API SafetensorsWriter {
 public:
  // InvalidArgument when the name is empty, "__metadata__", not UTF-8 or already added, a dimension
  // is negative, the size overflows, or bytes.size() is not elements * dtype_size(dtype).
  Status add(std::string name, TensorDType dtype, std::vector<int64_t> shape, std::span<const uint8_t> bytes);
  // Adds an F32 tensor.
  Status add_floats(std::string name, std::vector<int64_t> shape, std::span<const float> values);
  // Sets (or replaces) one "__metadata__" entry; InvalidArgument when key or value is not UTF-8.
  Status set_metadata(std::string key, std::string value);

  // The complete file.
  std::vector<uint8_t> serialize() const;
  // Writes serialize() to `path` atomically: either the old file or the complete new one survives.
  Status write(const std::string& path) const;

 private:
  struct Pending {
    std::string name;
    TensorDType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<Pending> tensors_;
  std::set<std::string, std::less<>> names_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace rill
