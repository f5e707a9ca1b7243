// rill::Tensor accessors and dtype helpers.
#include "rill/tensor.hpp"

#include "context_impl.hpp"

namespace rill {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kI32: return "i32";
    case DType::kU32: return "u32";
    case DType::kU8: return "u8";
  }
  return "?";
}

uint32_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: return 2;
    case DType::kU8: return 1;
  }
  return 0;
}

Tensor::~Tensor() = default;

namespace {
const std::vector<int64_t> kNoShape;
const std::string kNoName;
}  // namespace

DType Tensor::dtype() const { return storage_ ? storage_->dtype : DType::kF32; }
const std::vector<int64_t>& Tensor::shape() const { return storage_ ? storage_->shape : kNoShape; }
uint64_t Tensor::element_count() const { return storage_ ? storage_->elements : 0; }
uint64_t Tensor::size_bytes() const { return storage_ ? storage_->bytes : 0; }
const std::string& Tensor::name() const { return storage_ ? storage_->name : kNoName; }

std::string Tensor::describe() const {
  if (!storage_) return "<empty tensor>";
  std::string s = (storage_->name.empty() ? std::string("tensor") : storage_->name) + " " + dtype_name(storage_->dtype) + "[";
  for (size_t i = 0; i < storage_->shape.size(); ++i) s += (i ? ", " : "") + std::to_string(storage_->shape[i]);
  return s + "]";
}

}  // namespace rill
