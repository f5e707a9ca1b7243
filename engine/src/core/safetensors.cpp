// Safetensors: header validation of untrusted files, zero-copy access through a file mapping, and a writer
// that lays tensors out back to back behind a space-padded, 8-byte aligned header.
#include "rill/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "core/checked_math.hpp"
#include "core/file_io.hpp"
#include "core/host_memory_guard.hpp"
#include "core/json_keys.hpp"
#include "platform/files.hpp"
#include "rill/half.hpp"

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; reading it in place needs a little-endian host");

namespace rill {
namespace {

using Json = nlohmann::json;

struct DTypeInfo {
  TensorDType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {TensorDType::kF32, "F32", 4}, {TensorDType::kF16, "F16", 2}, {TensorDType::kBF16, "BF16", 2},
    {TensorDType::kF64, "F64", 8}, {TensorDType::kI64, "I64", 8}, {TensorDType::kI32, "I32", 4},
    {TensorDType::kU32, "U32", 4}, {TensorDType::kI16, "I16", 2}, {TensorDType::kU16, "U16", 2},
    {TensorDType::kI8, "I8", 1},   {TensorDType::kU8, "U8", 1},   {TensorDType::kBool, "BOOL", 1},
};

constexpr uint64_t kLengthPrefixBytes = 8;
constexpr uint64_t kDataAlignment = 8;
constexpr std::string_view kMetadataKey = "__metadata__";
// Top-level object > tensor object > shape array. Anything deeper is not a safetensors header.
constexpr size_t kMaxHeaderNesting = 3;

const DTypeInfo& info_of(TensorDType dtype) {
  for (const auto& info : kDTypes)
    if (info.dtype == dtype) return info;
  return kDTypes[0];  // unreachable for valid enum values
}

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

// A name or key from the file for an error message: quoted, and cut short if a hostile file made
// it huge.
std::string name_text(std::string_view s) {
  constexpr size_t kMaxShown = 128;
  if (s.size() <= kMaxShown) return in_quotes(s);
  return in_quotes(s.substr(0, kMaxShown)) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string shape_text(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string type_and_shape(TensorDType dtype, std::span<const int64_t> shape) {
  return std::string(dtype_name(dtype)) + " " + shape_text(shape);
}

std::string offsets_text(uint64_t begin, uint64_t end) {
  return "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Product of the dimensions; a zero dimension gives 0 whatever the others are. nullopt when a
// dimension is negative or the product overflows.
std::optional<uint64_t> element_count(std::span<const int64_t> shape) {
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) return std::nullopt;
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d == 0; })) return 0;
  uint64_t n = 1;
  for (int64_t d : shape) {
    auto next = checked_mul(n, static_cast<uint64_t>(d));
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<uint64_t> byte_count(TensorDType dtype, std::span<const int64_t> shape) {
  auto n = element_count(shape);
  if (!n) return std::nullopt;
  return checked_mul(*n, dtype_size(dtype));
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    uint32_t min;
    if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1fu, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0fu, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07u, min = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cont = static_cast<uint8_t>(s[i + k]);
      if ((cont & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cont & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

// A JSON value for an error message, never the whole of a large one.
std::string describe(const Json& v) {
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return s.size() <= 32 ? Json(s).dump() : "a string";
  }
  return std::string("an ") + v.type_name();  // "an object", "an array"
}

// Reads a non-negative JSON integer. nlohmann stores non-negative integers as number_unsigned;
// negative ones are number_integer, and anything with a fraction, an exponent or above 2^64-1
// is number_float.
std::optional<uint64_t> as_unsigned(const Json& v) {
  if (!v.is_number_unsigned()) return std::nullopt;
  return v.get<uint64_t>();
}

}  // namespace

size_t dtype_size(TensorDType dtype) { return info_of(dtype).size; }

std::string_view dtype_name(TensorDType dtype) { return info_of(dtype).name; }

std::optional<TensorDType> dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

int64_t SafetensorsEntry::elements() const {
  auto n = element_count(shape);
  if (!n || *n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return -1;
  return static_cast<int64_t>(*n);
}

// ---- SafetensorsFile ----

struct SafetensorsFile::Impl {
  std::string label;           // path or "<memory>"
  std::vector<uint8_t> owned;  // from_bytes()
  platform::MappedFile mapping;   // open()
  const uint8_t* data = nullptr;  // whole file
  uint64_t size = 0;
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, size_t, std::less<>> index;  // name -> position in entries
  std::map<std::string, std::string> metadata;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() = default;

  std::string where() const { return "safetensors " + in_quotes(label) + ": "; }
  Status corrupt(const std::string& what) const { return data_loss(where() + what); }
  Status corrupt(std::string_view tensor, const std::string& what) const {
    return data_loss(where() + "tensor " + name_text(tensor) + ": " + what);
  }

  // Validates the header and fills entries, index and metadata. Never throws.
  Status parse(const SafetensorsLimits& limits);
  Status parse_header(const SafetensorsLimits& limits);
  Status parse_entry(const std::string& name, const Json& value, uint64_t data_start, uint64_t data_size,
                     const SafetensorsLimits& limits);
  Status parse_metadata(const Json& value);
  Status check_tiling(uint64_t data_start);
  Result<const SafetensorsEntry*> lookup(std::string_view name) const;
};

Status SafetensorsFile::Impl::parse_header(const SafetensorsLimits& limits) {
  if (size < kLengthPrefixBytes)
    return corrupt("file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (uint64_t i = 0; i < kLengthPrefixBytes; ++i) header_len |= uint64_t{data[i]} << (8 * i);
  if (header_len == 0) return corrupt("header length is 0");
  if (header_len > limits.max_header_bytes)
    return out_of_range(where() + "header length " + std::to_string(header_len) + " exceeds the limit of " +
                        std::to_string(limits.max_header_bytes) + " bytes");
  if (header_len > size - kLengthPrefixBytes)
    return corrupt("header length " + std::to_string(header_len) + " runs past the end of the " + std::to_string(size) +
                   "-byte file");
  // Checked and parsed from one copy: a mapped file rewritten between the checks and the parse
  // would otherwise hand the parser a header the checks never saw (deeper nesting, say).
  std::string copy;
  try {
    copy.assign(reinterpret_cast<const char*>(data + kLengthPrefixBytes), size_t(header_len));
  } catch (const std::bad_alloc&) {
    return resource_exhausted(where() + "no host memory for the " + std::to_string(header_len) + "-byte header");
  }
  const std::string_view text(copy);
  if (text[0] != '{') return corrupt("header does not start with '{'");
  // JSON never holds a raw NUL, and nlohmann stops reading at one, so "{}\0<anything>" would pass.
  if (text.find('\0') != std::string_view::npos) return corrupt("header contains a NUL byte");
  if (nests_deeper_than(text, kMaxHeaderNesting))
    return corrupt("header nests objects or arrays deeper than " + std::to_string(kMaxHeaderNesting) + " levels");

  // nlohmann keeps one of two equal keys silently: look for them first (linear time).
  if (auto duplicate = first_duplicate_key(text))
    return corrupt("header has the key " + name_text(*duplicate) + " twice in one object");
  const Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return corrupt("header is not valid JSON");
  if (!doc.is_object()) return corrupt("header is not a JSON object");  // unreachable after the '{' check

  const size_t tensor_count = doc.size() - (doc.contains(kMetadataKey) ? 1 : 0);
  if (tensor_count > limits.max_tensors)
    return out_of_range(where() + std::to_string(tensor_count) + " tensors exceed the limit of " +
                        std::to_string(limits.max_tensors));

  const uint64_t data_start = kLengthPrefixBytes + header_len;
  const uint64_t data_size = size - data_start;
  entries.reserve(tensor_count);
  for (const auto& [name, value] : doc.items()) {
    if (name == kMetadataKey) {
      RILL_RETURN_IF_ERROR(parse_metadata(value));
    } else {
      RILL_RETURN_IF_ERROR(parse_entry(name, value, data_start, data_size, limits));
    }
  }
  RILL_RETURN_IF_ERROR(check_tiling(data_start));
  for (size_t i = 0; i < entries.size(); ++i) index.emplace(entries[i].name, i);
  return Status::ok();
}

Status SafetensorsFile::Impl::parse_entry(const std::string& name, const Json& value, uint64_t data_start,
                                          uint64_t data_size, const SafetensorsLimits& limits) {
  if (name.size() > limits.max_name_bytes)
    return out_of_range(where() + "a tensor name of " + std::to_string(name.size()) + " bytes exceeds the limit of " +
                        std::to_string(limits.max_name_bytes));
  if (!value.is_object()) return corrupt(name, "is " + describe(value) + ", not a JSON object");
  for (const auto& [key, unused] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      return corrupt(name, "unexpected field " + name_text(key));
  }
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field)) return corrupt(name, std::string("missing field '") + field + "'");

  SafetensorsEntry entry;
  entry.name = name;

  const Json& dtype = value["dtype"];
  if (!dtype.is_string()) return corrupt(name, "dtype is " + describe(dtype) + ", not a string");
  const auto parsed_dtype = dtype_from_name(dtype.get_ref<const std::string&>());
  if (!parsed_dtype) return corrupt(name, "unknown dtype " + describe(dtype));
  entry.dtype = *parsed_dtype;

  const Json& shape = value["shape"];
  if (!shape.is_array()) return corrupt(name, "shape is " + describe(shape) + ", not an array");
  if (shape.size() > limits.max_rank)
    return out_of_range(where() + "tensor " + name_text(name) + ": rank " + std::to_string(shape.size()) +
                        " exceeds the limit of " + std::to_string(limits.max_rank));
  for (size_t i = 0; i < shape.size(); ++i) {
    const auto dim = as_unsigned(shape[i]);
    if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return corrupt(name,
                     "shape entry " + std::to_string(i) + " is " + describe(shape[i]) + ", not a non-negative integer");
    entry.shape.push_back(static_cast<int64_t>(*dim));
  }

  const Json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    return corrupt(name, "data_offsets is " + describe(offsets) + ", not an array of two integers");
  const auto begin = as_unsigned(offsets[0]);
  const auto end = as_unsigned(offsets[1]);
  if (!begin || !end)
    return corrupt(name, "data_offsets [" + describe(offsets[0]) + ", " + describe(offsets[1]) +
                             "] are not two non-negative integers");
  if (*begin > *end) return corrupt(name, offsets_text(*begin, *end) + " begin after they end");
  if (*end > data_size)
    return corrupt(name,
                   offsets_text(*begin, *end) + " end past the " + std::to_string(data_size) + "-byte data region");

  const auto needed = byte_count(entry.dtype, entry.shape);
  if (!needed) return corrupt(name, "the size of " + type_and_shape(entry.dtype, entry.shape) + " overflows 64 bits");
  if (*end - *begin != *needed)
    return corrupt(name, offsets_text(*begin, *end) + " cover " + std::to_string(*end - *begin) + " bytes but " +
                             type_and_shape(entry.dtype, entry.shape) + " needs " + std::to_string(*needed));
  entry.offset = data_start + *begin;
  entry.bytes = *needed;
  entries.push_back(std::move(entry));
  return Status::ok();
}

Status SafetensorsFile::Impl::parse_metadata(const Json& value) {
  if (!value.is_object()) return corrupt("__metadata__ is " + describe(value) + ", not a JSON object");
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string())
      return corrupt("__metadata__ value of " + name_text(key) + " is " + describe(v) + ", not a string");
    metadata.emplace(key, v.get<std::string>());
  }
  return Status::ok();
}

// Sorted by begin, each tensor must start where the previous one ended and the last must end at
// the end of the file: no overlaps (two names for the same bytes), no gaps, no trailing bytes.
Status SafetensorsFile::Impl::check_tiling(uint64_t data_start) {
  std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return std::tie(a.offset, a.bytes, a.name) < std::tie(b.offset, b.bytes, b.name);
  });
  auto offsets_of = [&](const SafetensorsEntry& e) {
    return offsets_text(e.offset - data_start, e.offset - data_start + e.bytes);
  };
  uint64_t covered = data_start;
  const SafetensorsEntry* previous = nullptr;
  for (const auto& e : entries) {
    if (e.offset < covered)
      return corrupt(
          e.name, offsets_of(e) + " overlap tensor " + name_text(previous->name) + " (" + offsets_of(*previous) + ")");
    if (e.offset > covered)
      return corrupt(
          e.name, offsets_of(e) + " leave a gap of " + std::to_string(e.offset - covered) + " bytes before the tensor");
    covered = e.offset + e.bytes;
    previous = &e;
  }
  if (covered != size)
    return corrupt(std::to_string(size - covered) + " bytes at the end of the data region belong to no tensor");
  return Status::ok();
}

Result<const SafetensorsEntry*> SafetensorsFile::Impl::lookup(std::string_view name) const {
  auto it = index.find(name);
  if (it == index.end()) return not_found(where() + "no tensor " + in_quotes(name));
  return &entries[it->second];
}

// Parsing allocates from sizes in the file; a header within the limits can still ask for more
// memory than the machine has. That, like any other exception, stays inside.
Status SafetensorsFile::Impl::parse(const SafetensorsLimits& limits) {
  try {
    return parse_header(limits);
  } catch (const std::bad_alloc&) {
    return detail::resource_exhausted_noexcept([&] { return where() + "out of memory while parsing the header"; });
  } catch (const std::exception& e) {
    return internal_error(where() + "unexpected error while parsing the header: " + e.what());
  }
}

SafetensorsFile::SafetensorsFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

Result<SafetensorsFile> SafetensorsFile::from_bytes(std::vector<uint8_t> bytes, const SafetensorsLimits& limits) {
  return from_bytes(std::move(bytes), "<memory>", limits);
}

Result<SafetensorsFile> SafetensorsFile::from_bytes(std::vector<uint8_t> bytes, std::string label,
                                                    const SafetensorsLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->label = std::move(label);
  if (bytes.size() > limits.max_file_bytes)
    return out_of_range(impl->where() + std::to_string(bytes.size()) + " bytes exceed the limit of " +
                        std::to_string(limits.max_file_bytes));
  impl->owned = std::move(bytes);
  impl->data = impl->owned.data();
  impl->size = impl->owned.size();
  RILL_RETURN_IF_ERROR(impl->parse(limits));
  return SafetensorsFile(std::move(impl));
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path, const SafetensorsLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->label = path;
  // Files up to this size (checkpoints, task sets, session states, small models) are read into
  // memory: one truncated or rewritten on disk while open can then neither fault a later read
  // (SIGBUS past a mapping's new end) nor change bytes after they were checked. Bigger ones are
  // mapped, not held twice (a model's weights go from the mapping to the device).
  constexpr uint64_t kReadWholeBytes = 64ull << 20;
  auto whole = platform::read_regular_file(path, std::min(limits.max_file_bytes, kReadWholeBytes));
  if (whole.is_ok()) {
    impl->owned = std::move(whole).value();
    impl->data = impl->owned.data();
    impl->size = impl->owned.size();
    RILL_RETURN_IF_ERROR(impl->parse(limits));
    return SafetensorsFile(std::move(impl));
  }
  if (whole.status().code() != StatusCode::kOutOfRange)  // past the size read whole: mapped below
    return Status(whole.status().code(), impl->where() + whole.status().message());
  auto mapped = platform::MappedFile::open(path, limits.max_file_bytes);
  if (!mapped.is_ok()) return Status(mapped.status().code(), impl->where() + mapped.status().message());
  impl->mapping = std::move(mapped).value();
  impl->data = impl->mapping.bytes().data();
  impl->size = impl->mapping.bytes().size();
  RILL_RETURN_IF_ERROR(impl->parse(limits));
  return SafetensorsFile(std::move(impl));
}

const std::vector<SafetensorsEntry>& SafetensorsFile::entries() const { return impl_->entries; }

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->entries[it->second];
}

std::span<const uint8_t> SafetensorsFile::bytes(const SafetensorsEntry& entry) const {
  const auto end = checked_add(entry.offset, entry.bytes);
  if (!end || *end > impl_->size || entry.bytes == 0) return {};
  return {impl_->data + entry.offset, static_cast<size_t>(entry.bytes)};
}

Result<std::span<const uint8_t>> SafetensorsFile::tensor(std::string_view name, TensorDType dtype,
                                                         std::span<const int64_t> shape) const {
  RILL_ASSIGN_OR_RETURN(const SafetensorsEntry* entry, impl_->lookup(name));
  if (entry->dtype != dtype || !std::equal(entry->shape.begin(), entry->shape.end(), shape.begin(), shape.end()))
    return invalid_argument(impl_->where() + "tensor " + in_quotes(name) + " is " +
                            type_and_shape(entry->dtype, entry->shape) + ", expected " + type_and_shape(dtype, shape));
  return bytes(*entry);
}

Status SafetensorsFile::check_finite(const SafetensorsEntry& entry) const {
  const std::span<const uint8_t> src = bytes(entry);
  const uint64_t n = entry.elements();
  // An entry of another file (or made by hand) may not fit this one's bytes: bytes() gives it none.
  if (uint64_t(src.size()) / dtype_size(entry.dtype) < n)
    return invalid_argument(impl_->where() + "tensor " + in_quotes(entry.name) + " is not an entry of this file");
  // The exponent field all ones is an infinity or a NaN; the mantissa says which.
  auto first_bad = [&](auto type_tag, auto exponent_mask, auto mantissa_mask) -> std::optional<std::pair<uint64_t, bool>> {
    using Bits = decltype(type_tag);
    for (uint64_t i = 0; i < n; ++i) {
      Bits b;
      std::memcpy(&b, src.data() + i * sizeof(Bits), sizeof(Bits));
      if ((b & exponent_mask) == exponent_mask) return std::pair{i, (b & mantissa_mask) != 0};
    }
    return std::nullopt;
  };
  std::optional<std::pair<uint64_t, bool>> bad;
  switch (entry.dtype) {
    case TensorDType::kF32: bad = first_bad(uint32_t{}, uint32_t{0x7F800000u}, uint32_t{0x007FFFFFu}); break;
    case TensorDType::kF16: bad = first_bad(uint16_t{}, uint16_t{0x7C00u}, uint16_t{0x03FFu}); break;
    case TensorDType::kBF16: bad = first_bad(uint16_t{}, uint16_t{0x7F80u}, uint16_t{0x007Fu}); break;
    case TensorDType::kF64:
      bad = first_bad(uint64_t{}, uint64_t{0x7FF0000000000000ull}, uint64_t{0x000FFFFFFFFFFFFFull});
      break;
    default: return Status::ok();
  }
  if (!bad) return Status::ok();
  return data_loss(impl_->where() + "tensor " + in_quotes(entry.name) + " holds " + (bad->second ? "a NaN" : "an infinity") +
                   " at flat index " + std::to_string(bad->first));
}

Result<std::vector<float>> SafetensorsFile::read_floats(std::string_view name,
                                                        std::span<const int64_t> expected_shape) const {
  RILL_ASSIGN_OR_RETURN(const SafetensorsEntry* entry, impl_->lookup(name));
  if (!std::equal(entry->shape.begin(), entry->shape.end(), expected_shape.begin(), expected_shape.end()))
    return invalid_argument(impl_->where() + "tensor " + in_quotes(name) + " has shape " + shape_text(entry->shape) +
                            ", expected " + shape_text(expected_shape));
  const std::span<const uint8_t> src = bytes(*entry);
  const size_t n = static_cast<size_t>(entry->elements());
  std::vector<float> out;
  try {  // a file's shape asks for this much: without the host memory, an error, not an abort
    out.resize(n);
  } catch (const std::bad_alloc&) {
    return detail::resource_exhausted_noexcept([&] {
      return impl_->where() + "no host memory for the " + std::to_string(n) + " floats of tensor " + in_quotes(name);
    });
  }
  switch (entry->dtype) {
    case TensorDType::kF32:
      if (n) std::memcpy(out.data(), src.data(), n * sizeof(float));
      break;
    case TensorDType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src.data() + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      break;
    case TensorDType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, src.data() + 2 * i, 2);
        out[i] = std::bit_cast<float>(uint32_t{b} << 16);  // bf16 is the top half of an f32
      }
      break;
    case TensorDType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, src.data() + 8 * i, 8);
        // A finite value past f32's range has no float (the conversion is undefined): named, not an
        // infinity that a caller reports as a non-finite value the file does not hold.
        if (std::isfinite(d) && std::fabs(d) > double(FLT_MAX))
          return out_of_range(impl_->where() + "tensor " + in_quotes(name) + " holds " + std::to_string(d) +
                              " at flat index " + std::to_string(i) + ", past f32's range");
        out[i] = static_cast<float>(d);
      }
      break;
    default:
      return invalid_argument(impl_->where() + "tensor " + in_quotes(name) + " is " +
                              std::string(dtype_name(entry->dtype)) + "; read_floats reads F32, F16, BF16 or F64");
  }
  return out;
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return impl_->metadata; }

const std::string& SafetensorsFile::label() const { return impl_->label; }

// ---- SafetensorsWriter ----

Status SafetensorsWriter::add(std::string name, TensorDType dtype, std::vector<int64_t> shape,
                              std::span<const uint8_t> bytes) {
  return detail::host_memory_guarded("safetensors writer", [&] {
    const std::string where = "safetensors writer: tensor " + in_quotes(name) + ": ";
    if (name.empty()) return invalid_argument("safetensors writer: empty tensor name");
    if (name == kMetadataKey) return invalid_argument(where + "the name is reserved for metadata");
    if (!is_utf8(name)) return invalid_argument("safetensors writer: tensor name is not valid UTF-8");
    if (names_.count(name)) return invalid_argument(where + "added twice");
    // What SafetensorsFile opens under its default limits: a file this writes can be read back.
    const SafetensorsLimits limits;
    if (name.size() > limits.max_name_bytes)
      return invalid_argument("safetensors writer: a tensor name of " + std::to_string(name.size()) +
                              " bytes is longer than a reader's limit of " + std::to_string(limits.max_name_bytes));
    if (shape.size() > limits.max_rank)
      return invalid_argument(where + "rank " + std::to_string(shape.size()) + " is above a reader's limit of " +
                              std::to_string(limits.max_rank));
    if (tensors_.size() >= limits.max_tensors)
      return invalid_argument(where + "more than a reader's limit of " + std::to_string(limits.max_tensors) +
                              " tensors");
    if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
      return invalid_argument(where + "shape " + shape_text(shape) + " has a negative dimension");
    const auto needed = byte_count(dtype, shape);
    if (!needed) return invalid_argument(where + "the size of " + type_and_shape(dtype, shape) + " overflows 64 bits");
    if (bytes.size() != *needed)
      return invalid_argument(where + type_and_shape(dtype, shape) + " needs " + std::to_string(*needed) +
                              " bytes, got " + std::to_string(bytes.size()));
    // Everything that can run out of memory before the writer changes: a name is registered only
    // with its tensor behind it.
    Pending tensor{name, dtype, std::move(shape), std::vector<uint8_t>(bytes.begin(), bytes.end())};
    if (tensors_.size() == tensors_.capacity()) tensors_.reserve(std::max<size_t>(8, 2 * tensors_.size()));
    names_.insert(std::move(name));
    tensors_.push_back(std::move(tensor));  // reserved: cannot throw
    return Status::ok();
  });
}

Status SafetensorsWriter::add_floats(std::string name, std::vector<int64_t> shape, std::span<const float> values) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes());
  return add(std::move(name), TensorDType::kF32, std::move(shape), bytes);
}

Status SafetensorsWriter::set_metadata(std::string key, std::string value) {
  return detail::host_memory_guarded("safetensors writer", [&] {
    if (!is_utf8(key) || !is_utf8(value))
      return invalid_argument("safetensors writer: metadata key or value is not valid UTF-8");
    metadata_[std::move(key)] = std::move(value);
    return Status::ok();
  });
}

std::vector<uint8_t> SafetensorsWriter::serialize() const {
  // ordered_json keeps the header in insertion order, which makes files easy to read by eye.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    auto& meta = header[std::string(kMetadataKey)];
    meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    auto& e = header[t.name];
    e["dtype"] = std::string(dtype_name(t.dtype));
    e["shape"] = t.shape;
    e["data_offsets"] = nlohmann::ordered_json::array({offset, offset + t.data.size()});
    offset += t.data.size();
  }
  // Names and metadata were checked to be UTF-8 in add(), so strict dumping cannot throw.
  std::string text = header.dump();
  text.resize(static_cast<size_t>(align_up(text.size(), kDataAlignment)), ' ');

  std::vector<uint8_t> out;
  out.reserve(kLengthPrefixBytes + text.size() + offset);
  const uint64_t header_len = text.size();
  for (uint64_t i = 0; i < kLengthPrefixBytes; ++i) out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& t : tensors_) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

Status SafetensorsWriter::write(const std::string& path) const {
  return detail::host_memory_guarded("safetensors writer", [&] {
    const std::string context = "safetensors " + in_quotes(path);  // built first: nothing may fail after the write
    return write_file_atomic(path, serialize()).with_context(context);
  });
}

}  // namespace rill
