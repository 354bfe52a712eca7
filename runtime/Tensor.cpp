#include "runtime/Tensor.h"

#include "runtime/HalfFloat.h"

#include <cmath>
#include <cstring>

namespace fusec {

namespace {
template <typename T> T load(const TensorBytes &bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}
template <typename T> void store(TensorBytes &bytes, int64_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}
/// Integers wrap like the kernels' two's-complement arithmetic.
/// (Values from 2^63, which only a u64 holds, convert directly.)
template <typename T> T wrapInteger(double value) {
  if (value >= 9223372036854775808.0)
    return static_cast<T>(static_cast<uint64_t>(value));
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
  case DType::I16:
    return load<int16_t>(bytes, i);
  case DType::U8:
    return load<uint8_t>(bytes, i);
  case DType::U16:
    return load<uint16_t>(bytes, i);
  case DType::U32:
    return load<uint32_t>(bytes, i);
  case DType::U64:
    return static_cast<double>(load<uint64_t>(bytes, i));
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
  case DType::I16:
    return store<int16_t>(bytes, i, wrapInteger<int16_t>(value));
  case DType::U8:
    return store<uint8_t>(bytes, i, wrapInteger<uint8_t>(value));
  case DType::U16:
    return store<uint16_t>(bytes, i, wrapInteger<uint16_t>(value));
  case DType::U32:
    return store<uint32_t>(bytes, i, wrapInteger<uint32_t>(value));
  case DType::U64:
    return store<uint64_t>(bytes, i, wrapInteger<uint64_t>(value));
  }
}

std::string Tensor::typeString() const {
  return std::string(dtypeName(dtype)) + "[" + formatShape(shape) + "]";
}

} // namespace fusec
