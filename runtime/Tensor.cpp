#include "runtime/Tensor.h"

#include "runtime/HalfFloat.h"

#include <cmath>
#include <cstring>

namespace fusec {

namespace {
template <typename T> T load(const std::vector<uint8_t> &bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}
template <typename T>
void store(std::vector<uint8_t> &bytes, int64_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}
/// Integers wrap like the kernels' two's-complement arithmetic.
template <typename T> T wrapInteger(double value) {
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(value)));
}
} // namespace

double Tensor::at(int64_t i) const {
  switch (dtype) {
  case DType::F64:
    return load<double>(bytes, i);
  case DType::F32:
    return load<float>(bytes, i);
  case DType::F16:
    return fusec_f16_to_f32(load<uint16_t>(bytes, i));
  case DType::BF16:
    return fusec_bf16_to_f32(load<uint16_t>(bytes, i));
  case DType::I8:
    return load<int8_t>(bytes, i);
  case DType::I32:
    return load<int32_t>(bytes, i);
  case DType::I64:
    return static_cast<double>(load<int64_t>(bytes, i));
  case DType::I1:
    return load<uint8_t>(bytes, i) != 0;
  }
  return 0;
}

void Tensor::set(int64_t i, double value) {
  switch (dtype) {
  case DType::F64:
    return store<double>(bytes, i, value);
  case DType::F32:
    return store<float>(bytes, i, static_cast<float>(value));
  case DType::F16:
    return store<uint16_t>(bytes, i, fusec_f64_to_f16(value));
  case DType::BF16:
    return store<uint16_t>(bytes, i, fusec_f64_to_bf16(value));
  case DType::I8:
    return store<int8_t>(bytes, i, wrapInteger<int8_t>(value));
  case DType::I32:
    return store<int32_t>(bytes, i, wrapInteger<int32_t>(value));
  case DType::I64:
    return store<int64_t>(bytes, i, static_cast<int64_t>(value));
  case DType::I1:
    return store<uint8_t>(bytes, i, value != 0 ? 1 : 0);
  }
}

std::string Tensor::typeString() const {
  return std::string(dtypeName(dtype)) + "[" + formatShape(shape) + "]";
}

} // namespace fusec
